import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SpaceContentUpdated } from '../src/webhooks/events';
import { eventLoopDelay, openLoop, percentile, progress, until } from './load';
import type { BenchReceiver } from './receiver';

/** A tenant of the bench: its organization and its installations' ids. */
export interface BenchTenant {
  org: string;
  installations: string[];
}

export interface NeighbourDeps {
  /** The receiver of the tenant watched: scripted per eventId, as the other scenarios'. */
  receiver: BenchReceiver;
  /** A tenant with one webhook installation to `url` (the receiver's unless given). */
  tenant(url?: string): Promise<BenchTenant>;
  /** POSTs one event and resolves once it is accepted (202). */
  ingest(event: SpaceContentUpdated): Promise<unknown>;
  /** Installations whose receivers hang, those whose receivers refuse connections, and how long each phase sends. */
  hangingTenants: number;
  refusingTenants: number;
  seconds: number;
  /** The platform process's /metrics text (its event-loop delay is reported beside the latencies). */
  metrics(): Promise<string>;
}

/** A receiver that takes each POST and never answers (every attempt to it times out, 10 s), or, `served`, answers 200 at once. */
async function neighbourReceiver(served = false) {
  let posts = 0;
  const server = http.createServer((req, res) => {
    posts += 1;
    req.resume();
    if (served) req.on('end', () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    posts: () => posts,
    stop() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** A port nothing listens on (taken, then let go): every attempt to it is refused at once. */
async function refusingUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}/hook`;
}

/** Events of one tenant whose eventIds carry `label`. */
const eventOf = (tenant: BenchTenant, label: string, i: number): SpaceContentUpdated => ({ type: 'space_content_updated', organizationId: tenant.org, spaceId: 'space', revisionId: `rev-${i}`, eventId: `evt_${label}_${tenant.org}_${i}` });

/** A phase's first seconds, reported apart: the neighbours' installations never seen before, their first batches each their own. */
const FIRST_SECONDS = 15;

/**
 * (g) Noisy neighbours: installations whose receivers hang or refuse connections must not
 * hold back other tenants'. The tenant watched sends 5 events/s that its receiver takes at
 * once and 2 events/s that it answers 500 twice before a 200: first alone (its baseline),
 * then beside `hangingTenants` tenants sending 1 event/s each to receivers that hang, and
 * `refusingTenants` sending 1 event/s each to ports that refuse, one receiver each (as
 * many hosts): for a minute of onset, then the minute measured (a receiver failing is one
 * that has been, and their new events are held once they have failed 10 s; the onset's
 * figures are reported too). Its delivery latency and retry gaps, in each phase; and, as a control, beside
 * as many neighbours sending as much to receivers that answer 200 at once: what the same
 * traffic costs it when nothing fails.
 */
export async function noisyNeighbourScenario(deps: NeighbourDeps) {
  const watched = await deps.tenant();
  const hanging = await Promise.all(Array.from({ length: deps.hangingTenants }, () => neighbourReceiver()));
  const served = await Promise.all(Array.from({ length: deps.hangingTenants + deps.refusingTenants }, () => neighbourReceiver(true)));
  const failing: BenchTenant[] = [];
  for (const receiver of hanging) failing.push(await deps.tenant(receiver.url));
  for (let i = 0; i < deps.refusingTenants; i++) failing.push(await deps.tenant(await refusingUrl()));
  const healthy: BenchTenant[] = [];
  for (const receiver of served) healthy.push(await deps.tenant(receiver.url));
  const postsTo = (receivers: { posts(): number }[]) => receivers.reduce((sum, receiver) => sum + receiver.posts(), 0);
  const hangingPosts = () => postsTo(hanging);
  // Each event of the flaky stream is answered 500 at its first two POSTs, then 200.
  const answer = (eventId: string, n: number) => (eventId.startsWith('evt_gflaky') && n < 2 ? 500 : 200);

  /**
   * One phase: the tenant and `neighbours` send for `seconds`; with `onsetSeconds`, for as
   * long again first, and the tenant's figures of that onset (the neighbours' receivers
   * failing for the first minute) are apart from those of the minute after.
   */
  const phase = async (label: string, neighbours: BenchTenant[], onsetSeconds = 0) => {
    deps.receiver.reset(answer);
    const sentAt = new Map<string, number>();
    let neighbourEvents = 0;
    const send = (event: SpaceContentUpdated) => {
      if (event.organizationId === watched.org) sentAt.set(event.eventId!, performance.now());
      else neighbourEvents += 1;
      return deps.ingest(event).then(() => undefined);
    };
    const postsBefore = hangingPosts();
    const stop = progress(`g ${label}`, () => `sent ${sentAt.size}, delivered ${deps.receiver.delivered().size}, POSTs to hanging receivers ${hangingPosts() - postsBefore}`);
    const delay = eventLoopDelay(deps.metrics);
    const startedAt = performance.now();
    const steadyFrom = startedAt + onsetSeconds * 1000;
    const seconds = deps.seconds + onsetSeconds;
    await Promise.all([
      openLoop(5, seconds, (i) => send(eventOf(watched, `g${label}`, i))),
      openLoop(2, seconds, (i) => send(eventOf(watched, `gflaky${label}`, i))),
      neighbours.length ? openLoop(neighbours.length, seconds, (i) => send(eventOf(neighbours[i % neighbours.length]!, `gn${label}`, i))) : Promise.resolve(),
    ]);
    await until(() => deps.receiver.delivered().size >= sentAt.size, 60_000);
    stop();
    const platformEventLoopDelay = delay.stop();
    const delivered = deps.receiver.delivered();
    const healthyEndToEnd = (window: (sent: number) => boolean) => [...sentAt].filter(([id, at]) => window(at) && !id.startsWith('evt_gflaky') && delivered.has(id)).map(([id, at]) => delivered.get(id)! - at);
    const figures = (window: (sent: number) => boolean) => {
      const healthy = healthyEndToEnd(window);
      return { healthyEndToEndMs: { p50: percentile(healthy, 50), p99: percentile(healthy, 99) }, retryGaps: deps.receiver.retryGaps((eventId) => sentAt.has(eventId) && window(sentAt.get(eventId)!)) };
    };
    // The neighbours' first seconds (each installation never seen before), served or failing: the same burst either way.
    const first = healthyEndToEnd((at) => at < startedAt + FIRST_SECONDS * 1000);
    return {
      sent: sentAt.size,
      neighbourEvents,
      undelivered: sentAt.size - delivered.size,
      ...figures((at) => at >= steadyFrom),
      ...(onsetSeconds > 0 && { onset: figures((at) => at < steadyFrom) }),
      firstSeconds: { count: first.length, p50: percentile(first, 50), worst: percentile(first, 100) },
      platformEventLoopDelay,
      ...(neighbours === failing && { postsToHangingReceivers: hangingPosts() - postsBefore }),
    };
  };

  try {
    const alone = await phase('alone', []);
    // The control first, and drained before the failing ones' phase: retries of hanging receivers outlast a phase by some 47 s.
    const servedBefore = postsTo(served);
    const besideServed = await phase('served', healthy);
    const drainedAt = performance.now();
    await until(() => postsTo(served) - servedBefore >= besideServed.neighbourEvents, 300_000);
    const control = { ...besideServed, postsToServedNeighbours: postsTo(served) - servedBefore, neighboursDrainedAfterMs: Math.round(performance.now() - drainedAt) };
    // A minute of onset (their receivers fail from the first event: attempts, then held once failing 10 s), then the minute measured.
    const beside = await phase('beside', failing, deps.seconds);
    return { hangingTenants: deps.hangingTenants, refusingTenants: deps.refusingTenants, eventsPerSPerNeighbour: 1, seconds: deps.seconds, alone, beside, besideServed: control };
  } finally {
    for (const receiver of [...hanging, ...served]) receiver.stop();
  }
}

/** (g)'s lines in the bench's report. */
export function noisyNeighbourReport(g: Awaited<ReturnType<typeof noisyNeighbourScenario>> & { ingestRetries: number }, line: (label: string, value: unknown) => string): string[] {
  return [
    `(g) ${g.hangingTenants} tenants whose receivers hang and ${g.refusingTenants} whose receivers refuse connections, ${g.eventsPerSPerNeighbour} event/s each, beside a tenant at 7 events/s (embedded default; target: its p99 within 250 ms of alone)`,
    line('its sent -> receiver p50 / p99 ms, once they had failed a minute', `${g.beside.healthyEndToEndMs.p50} / ${g.beside.healthyEndToEndMs.p99} (alone ${g.alone.healthyEndToEndMs.p50} / ${g.alone.healthyEndToEndMs.p99})`),
    ...g.beside.retryGaps.slice(0, 2).map((gap: any, k: number) => line(`its retry ${gap.retry} gaps (${gap.count})`, `p50 ${gap.p50Ms}, p99 ${gap.p99Ms} ms in ${gap.rangeMs.join('-')}: p99 ${gap.p99OverRangeMs} ms over (alone ${(g.alone.retryGaps as any)[k].p99OverRangeMs})`)),
    line(
      'in their first minute: p50 / p99 ms, retry 1 / 2 p99 over',
      `${g.beside.onset?.healthyEndToEndMs.p50} / ${g.beside.onset?.healthyEndToEndMs.p99}, ${(g.beside.onset?.retryGaps as any)?.[0]?.p99OverRangeMs} / ${(g.beside.onset?.retryGaps as any)?.[1]?.p99OverRangeMs} ms`,
    ),
    line(
      `its first ${FIRST_SECONDS} s, p50 / worst ms: beside them, beside as many served, alone`,
      [g.beside, g.besideServed, g.alone].map(({ firstSeconds }) => `${firstSeconds.p50} / ${firstSeconds.worst} (${firstSeconds.count})`).join(', '),
    ),
    line('its events undelivered', `${g.beside.undelivered} of ${g.beside.sent} (alone ${g.alone.undelivered})`),
    line('POSTs to hanging receivers', `${g.beside.postsToHangingReceivers}; ingest answers not 202, sent again: ${g.ingestRetries}`),
    line('platform event-loop delay, median of 2 s p99s / max ms', `${g.beside.platformEventLoopDelay.p99MedianMs} / ${g.beside.platformEventLoopDelay.maxMs} (alone ${g.alone.platformEventLoopDelay.p99MedianMs} / ${g.alone.platformEventLoopDelay.maxMs})`),
    line(
      'control: beside as many neighbours served at once, p50 / p99 ms',
      `${g.besideServed.healthyEndToEndMs.p50} / ${g.besideServed.healthyEndToEndMs.p99}, retry 1 p99 ${(g.besideServed.retryGaps as any)[0]?.p99OverRangeMs} ms over; ${g.besideServed.postsToServedNeighbours} POSTs to them (${g.besideServed.neighbourEvents} events, all delivered ${g.besideServed.neighboursDrainedAfterMs} ms after the tenant's); event-loop delay ${g.besideServed.platformEventLoopDelay.p99MedianMs} / ${g.besideServed.platformEventLoopDelay.maxMs}`,
    ),
  ];
}
