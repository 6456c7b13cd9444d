import { closedLoop, openLoop, paceOf, percentile, progress, until } from './load';
import type { BenchReceiver } from './receiver';
import { bare, bodiesOf, call, events, ingest, ratio, round, tenant, type Tenant } from './drive';
import type { Stack } from './stack';

/** Events a throttled installation is sent at once, and its max_per_second. */
const THROTTLED = { events: 1000, perSecond: 50 };
/** The watched tenant's pace beside the replay: 200 events in the 10 s window of BENCH_SCALE=0.2, a p99 that is not the worst of 50. */
const WATCHED_PER_S = 20;

/** How many of `list` the receiver has had (2xx): one read of its map, not one per event. */
const deliveredOf = (receiver: BenchReceiver, list: ReturnType<typeof events>) => {
  const delivered = receiver.delivered();
  return list.filter((event) => delivered.has(event.eventId!)).length;
};

/** The pace at which the receiver had `list`. */
const paceAt = (receiver: BenchReceiver, eventIds: string[]) => {
  const deliveredAt = receiver.delivered();
  return paceOf(eventIds.map((eventId) => deliveredAt.get(eventId)!));
};

/** The replay's subject fails at its first attempt (a 400), everything else is taken. */
const failAtIngest = (eventId: string) => (eventId.startsWith('evt_ofail') ? 400 : 200);

/** Sends `list` 500 a request, as fast as they are taken. */
async function sendAll(stack: Stack, list: ReturnType<typeof events>): Promise<void> {
  const counts = { retries: 0 };
  for (let i = 0; i < list.length; i += 500) await ingest(stack, list.slice(i, i + 500), counts);
}

/** The watched tenant's events sent at WATCHED_PER_S for `seconds`: sent -> receiver p50 / p99 (first attempts: its receiver takes each at once). */
async function watchedLatency(stack: Stack, receiver: BenchReceiver, watched: Tenant, label: string, seconds: number) {
  const list = events(watched, WATCHED_PER_S * seconds, label);
  const sentAt = new Map<string, number>();
  await openLoop(WATCHED_PER_S, seconds, async (i) => {
    sentAt.set(list[i]!.eventId!, performance.now());
    await ingest(stack, [list[i]!], { retries: 0 });
  });
  await until(() => deliveredOf(receiver, list) === list.length, 120_000);
  const delivered = receiver.delivered();
  const latencies = [...sentAt].filter(([id]) => delivered.has(id)).map(([id, at]) => delivered.get(id)! - at);
  return { events: list.length, delivered: latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

/**
 * (o) Issue 28's operations under load, on the embedded default. Throttling: 1,000 events
 * at once to an installation with max_per_second 50, the pace its receiver sees. A bulk
 * replay of `replayed` failed deliveries (their receiver answered 400 at ingest) as a
 * background operation, beside a tenant sending 20 events/s: its sent -> receiver latency
 * before and during the replay, the replay's own pace, and how long the call took.
 * Baselines, same run: a plain timer pacing the same bodies at max_per_second straight to
 * the receiver, and the bare loop POSTing the replayed bodies at 64 in flight.
 */
export async function operationsScenario(stack: Stack, receiver: BenchReceiver, replayed: number) {
  receiver.reset(failAtIngest);
  const throttled = await tenant(stack, receiver, 1);
  await call(stack, throttled.token, 'PATCH', `/v1/installations/${throttled.installations[0]}/configuration`, { max_per_second: THROTTLED.perSecond });
  const paced = events(throttled, THROTTLED.events, 'opace');
  const stopPace = progress('o pace', () => `delivered ${deliveredOf(receiver, paced)}/${paced.length}`);
  await sendAll(stack, paced);
  await until(() => deliveredOf(receiver, paced) === paced.length, 120_000);
  stopPace();
  const perSecond = paceAt(receiver, paced.map((event) => event.eventId!));
  receiver.reset(failAtIngest);
  const pacedBodies = bodiesOf(paced, throttled.installations[0]!);
  await bare(receiver, 'o pace', pacedBodies, (task) => openLoop(THROTTLED.perSecond, THROTTLED.events / THROTTLED.perSecond, task));
  // The bare loop's bodies carry eventIds of their own (bodiesOf).
  const barePerSecond = paceAt(receiver, pacedBodies.map((body) => (JSON.parse(body) as { eventId: string }).eventId));

  // The replay's subject: `replayed` events failed at their first attempt (a 400).
  const failing = await tenant(stack, receiver, 1);
  const failed = events(failing, replayed, 'ofail');
  const stopSeed = progress('o seed', () => `failed ${receiver.exhausted(1)}/${failed.length}`);
  await sendAll(stack, failed);
  await until(() => receiver.exhausted(1) >= failed.length, 600_000);
  stopSeed();
  const watched = await tenant(stack, receiver, 1);
  const before = await watchedLatency(stack, receiver, watched, 'obefore', 20);

  // The receiver takes everything now: the replays' first POSTs since this reset.
  receiver.reset();
  const asked = performance.now();
  const operation = await call(stack, failing.token, 'POST', '/v1/deliveries/replay', { installation: failing.installations[0], status: 'failed' });
  const answeredMs = performance.now() - asked;
  const replayedAt = () => deliveredOf(receiver, failed);
  const stop = progress('o replay', () => `replayed ${replayedAt()}/${failed.length}`);
  // The watched tenant goes on while at least half the replay is left.
  const during = await watchedLatency(stack, receiver, watched, 'oduring', Math.max(10, Math.round(replayed / 1000 / 2)));
  const leftWhenWatched = failed.length - replayedAt();
  await until(() => replayedAt() >= failed.length, 1_800_000);
  stop();
  const replaySeconds = (performance.now() - asked) / 1000;
  const finished = await call(stack, failing.token, 'GET', `/v1/operations/${operation.operation}`);
  receiver.reset();
  const bareReplay = await bare(receiver, 'o replay', bodiesOf(failed, failing.installations[0]!), (task) => closedLoop(failed.length, 64, task));
  const perS = failed.length / replaySeconds;
  return {
    throttle: { ...THROTTLED, deliveredPerS: round(perSecond, 2), ratio: round(perSecond / THROTTLED.perSecond, 3), bare: { deliveredPerS: round(barePerSecond, 2), ratio: round(barePerSecond / THROTTLED.perSecond, 3) } },
    replay: { count: operation.count, answeredMs: round(answeredMs), seconds: round(replaySeconds), perS: round(perS), status: finished.status, done: finished.done, leftWhenWatched, bare: bareReplay, ratio: ratio(perS, bareReplay.deliveredPerS) },
    watched: { before, during },
  };
}

/** (o)'s lines of the bench's report. */
export function operationsReport(o: Awaited<ReturnType<typeof operationsScenario>>, line: (label: string, value: unknown) => string): string[] {
  return [
    `(o) operations: throttling, and a bulk replay of ${o.replay.count} beside a tenant at ${WATCHED_PER_S} events/s (embedded default)`,
    line('throttled delivered/s', `${o.throttle.deliveredPerS} of max_per_second ${o.throttle.perSecond}: ratio ${o.throttle.ratio} (target 0.95-1.05)`),
    line('a plain timer at that pace', `${o.throttle.bare.deliveredPerS}/s: ratio ${o.throttle.bare.ratio}`),
    line('replay: answered / all delivered', `${o.replay.answeredMs} ms / ${o.replay.seconds} s (${o.replay.perS}/s; operation ${o.replay.status}, ${o.replay.done} done)`),
    line('bare loop, 64 in flight, unpaced', `${o.replay.bare.deliveredPerS}/s: the replay's ratio ${o.replay.ratio} (the platform paces it at <= 500/s)`),
    line('other tenant p50 / p99 ms', `${o.watched.during.p50Ms} / ${o.watched.during.p99Ms} during (${o.replay.leftWhenWatched} left at its end), ${o.watched.before.p50Ms} / ${o.watched.before.p99Ms} before`),
  ];
}
