import { MAX_RETRIES } from '../src/webhooks/schedule';
import { serializePayload, type SpaceContentUpdated } from '../src/webhooks/events';
import { barePoster, httpClient, percentile, progress, until } from './load';
import type { BenchReceiver } from './receiver';
import type { Stack } from './stack';

export const DRAIN_MS = 180_000;
export const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;
/** The greatest of many values (Math.max(...values) overflows the stack past some 120,000: the leak check delivers 180,000). */
export function latest(values: Iterable<number>): number {
  let most = -Infinity;
  for (const value of values) if (value > most) most = value;
  return most;
}

/** The bench's drivers: tenants and their installations, the platform's ingest client, a run through the platform and the bare loop beside it. */

export interface Tenant {
  org: string;
  token: string;
  installations: string[];
}

/**
 * One call of the platform's API; a GET answered 503 is tried again after its Retry-After,
 * as a client would (a worker that has just started answers its first tasks late).
 */
export async function call(stack: Pick<Stack, 'base'>, token: string, method: string, route: string, body?: unknown): Promise<any> {
  for (let tries = 1; ; tries++) {
    const response = await fetch(`${stack.base}${route}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    if (response.status === 503 && method === 'GET' && tries < 30) {
      await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get('retry-after') ?? 1) * 1000));
      continue;
    }
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text}`);
    return JSON.parse(text);
  }
}

let tenants = 0;
/** A tenant with `installations` webhook installations to `url` (the receiver's unless given, which then knows their secrets). */
export async function tenant(stack: Pick<Stack, 'base' | 'adminToken'>, receiver: BenchReceiver, installations: number, url = receiver.url): Promise<Tenant> {
  const org = `bench-${process.pid}-${++tenants}`;
  await call(stack, stack.adminToken, 'POST', '/v1/orgs', { id: org, subdomain: org, title: 'Bench' });
  const { token } = await call(stack, stack.adminToken, 'POST', '/v1/users', { id: `${org}-user`, orgs: [org] });
  const ids: string[] = [];
  for (let i = 0; i < installations; i++) {
    const installation = await call(stack, token, 'POST', '/v1/integrations/webhook/installations', { target: { org, space: 'space' }, configuration: { webhook_url: url, space_content_updated: true } });
    if (url === receiver.url) receiver.secrets.push((await call(stack, token, 'GET', `/v1/installations/${installation.id}/signing-secret`)).secret);
    ids.push(installation.id);
  }
  return { org, token, installations: ids };
}

export const events = (t: Tenant, n: number, label: string): SpaceContentUpdated[] =>
  Array.from({ length: n }, (_, i) => ({ type: 'space_content_updated', organizationId: t.org, spaceId: 'space', revisionId: `rev-${i}`, eventId: `evt_${label}_${t.org}_${i}` }));

/**
 * What takes the bench's events: the platform, or the relay under it (bench/relay.ts), or
 * another product (bench/svix.ts), which sends them its own way (`send`: as `ingest`).
 */
export type Ingesting = Pick<Stack, 'base' | 'adminToken' | 'cpu'> & { send?: (list: SpaceContentUpdated[], counts: { retries: number }) => Promise<number> };

/** The bench's client of the platform's ingest: the same as the bare loop's. */
export const ingestClient = httpClient(256);

/**
 * POSTs one event, or several through /v1/events/batch; what is not accepted (a 503, an item
 * answered `unavailable`, no answer: "not known to be accepted") is sent again. Answers the
 * time of the last request, ms.
 */
export async function ingest(stack: Ingesting, list: SpaceContentUpdated[], counts: { retries: number }): Promise<number> {
  for (let pending = list; ; ) {
    const started = performance.now();
    const [route, body] = pending.length === 1 ? ['/v1/events', pending[0]] : ['/v1/events/batch', { events: pending }];
    const response = await ingestClient.send(`${stack.base}${route}`, 'POST', { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' }, JSON.stringify(body)).catch(() => undefined);
    if (response && response.status !== 202 && response.status !== 503) throw new Error(`ingest answered ${response.status}`);
    if (response?.status === 202) {
      if (pending.length === 1) return performance.now() - started;
      const results = (JSON.parse(response.text) as { results: { deliveries?: string[]; error?: string }[] }).results;
      const refused = results.find((result) => !result.deliveries && result.error !== 'unavailable');
      if (refused) throw new Error(`ingest refused an event: ${JSON.stringify(refused)}`);
      pending = pending.filter((_, i) => !results[i]!.deliveries);
      if (pending.length === 0) return performance.now() - started;
    }
    counts.retries += 1;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Sends events through the platform, `perRequest` a request (task i sends the i-th group),
 * and waits for the receiver to have each once (2xx).
 */
export async function throughPlatform(stack: Ingesting, receiver: BenchReceiver, label: string, list: SpaceContentUpdated[], send: (task: (i: number) => Promise<void>) => Promise<void>, expected = list.length, perRequest = 1) {
  const sentAt = new Map<string, number>();
  const ackMs: number[] = [];
  const counts = { retries: 0 };
  const stop = progress(label, () => `sent ${sentAt.size}/${list.length}, delivered ${receiver.delivered().size}/${expected}`);
  const [stackCpu, benchCpu] = [stack.cpu(), process.cpuUsage()];
  const first = performance.now();
  await send(async (i) => {
    const part = list.slice(i * perRequest, (i + 1) * perRequest);
    const now = performance.now();
    for (const event of part) sentAt.set(event.eventId!, now);
    ackMs.push(await (stack.send ? stack.send(part, counts) : ingest(stack, part, counts)));
  });
  const ingestS = (performance.now() - first) / 1000;
  // A delivery whose every attempt drew a scripted 500 (1 in 10,000 in d) is settled too.
  await until(() => receiver.delivered().size + receiver.exhausted(MAX_RETRIES + 1) >= expected, DRAIN_MS);
  stop();
  const wallS = (performance.now() - first) / 1000;
  const cpuS: Record<string, number> = {};
  for (const [name, seconds] of Object.entries(stack.cpu())) if (seconds !== undefined && stackCpu[name] !== undefined) cpuS[name] = round(seconds - stackCpu[name]!);
  const benchUsage = process.cpuUsage(benchCpu);
  cpuS['bench (driver and receiver)'] = round((benchUsage.user + benchUsage.system) / 1e6);
  const delivered = receiver.delivered();
  const latencies = [...sentAt].filter(([id]) => delivered.has(id)).map(([id, at]) => delivered.get(id)! - at);
  const last = latest(delivered.values());
  return {
    // Where the 2 cores went: CPU seconds per process, and cores busy on average.
    cpuS,
    coresBusy: round(Object.values(cpuS).reduce((sum, seconds) => sum + seconds, 0) / wallS, 2),
    delivered: delivered.size,
    ingestPerS: round(list.length / ingestS),
    deliveredPerS: round(delivered.size / ((last - first) / 1000)),
    endToEndMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
    ackMs: { p50: percentile(ackMs, 50), p99: percentile(ackMs, 99) },
    ingestRetries: counts.retries,
    failedAfterRetries: receiver.exhausted(MAX_RETRIES + 1),
    duplicates: receiver.duplicates(),
    invalidSignatures: receiver.invalid,
  };
}

/** The same bodies, straight to the same receiver; see barePoster for `maxAttempts` and `atOnce`. */
export async function bare(receiver: BenchReceiver, label: string, bodies: string[], send: (task: (i: number) => Promise<void>) => Promise<void>, maxAttempts = 1, atOnce = false) {
  const poster = barePoster(receiver.url, () => receiver.secrets[0]!, 64);
  const sentAt = new Map<string, number>();
  const stop = progress(`${label} bare`, () => `sent ${sentAt.size}/${bodies.length}`);
  const first = performance.now();
  await send(async (i) => {
    sentAt.set(JSON.parse(bodies[i]!).eventId, performance.now());
    await poster.post(bodies[i]!, maxAttempts, atOnce);
  });
  await poster.settled();
  stop();
  poster.close();
  const delivered = receiver.delivered();
  const latencies = [...sentAt].filter(([id]) => delivered.has(id)).map(([id, at]) => delivered.get(id)! - at);
  return { deliveredPerS: round(delivered.size / ((latest(delivered.values()) - first) / 1000)), endToEndMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) } };
}

export const bodiesOf = (list: SpaceContentUpdated[], installationId: string) => list.map((event) => serializePayload(event, `${event.eventId}-bare`, installationId));
export const ratio = (platform: number, baseline: number) => round(platform / baseline, 3);

export type Run = Awaited<ReturnType<typeof throughPlatform>>;
export const BENCH_PROCESS = 'bench (driver and receiver)';

/**
 * What (a)'s target leaves the platform, in CPU an event: at half the bare loop's rate the
 * bench's own driver and receiver (their CPU an event in the platform's run) take their
 * share of the machine's cores, and the platform and its dev server get the rest, at best
 * all of it. Beside it, what they used, and what the relay alone (nothing durable) used.
 */
export function cpuBudget(platform: Run, relay: Run, bareDeliveredPerS: number, events: number, cores: number) {
  const msPerEvent = (seconds: number) => round((seconds * 1000) / events, 3);
  const others = (run: Run) => Object.entries(run.cpuS).filter(([name]) => name !== BENCH_PROCESS).reduce((sum, [, seconds]) => sum + seconds, 0);
  const benchMs = msPerEvent(platform.cpuS[BENCH_PROCESS]!);
  return {
    benchMsPerEvent: benchMs,
    platformMayUseMsPerEvent: round((cores * 1000) / (bareDeliveredPerS / 2) - benchMs, 3),
    platformUsedMsPerEvent: msPerEvent(others(platform)),
    relayUsedMsPerEvent: msPerEvent(others(relay)),
  };
}

