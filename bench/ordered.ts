import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { barePoster, closedLoop, paceOf, progress, until } from './load';
import type { BenchReceiver } from './receiver';
import { bodiesOf, call, events, ingest, ratio, round, tenant } from './drive';
import type { Stack } from './stack';

/** How long the ordered installation's receiver takes to answer each POST. */
const RECEIVER_MS = 2;

/** A receiver that answers 200 after RECEIVER_MS, noting the order events arrive in. */
async function slowReceiver() {
  const arrivals: { eventId: string; at: number }[] = [];
  const server = http.createServer({ keepAlive: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      arrivals.push({ eventId: (JSON.parse(Buffer.concat(chunks).toString()) as { eventId: string }).eventId, at: performance.now() });
      setTimeout(() => res.writeHead(200).end('{"received":true}'), RECEIVER_MS);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, arrivals, stop: () => (server.closeAllConnections(), server.close()) };
}

/**
 * (p) Ordered delivery: `count` events sent at once to an installation with `ordered: true`
 * whose receiver answers in 2 ms: the pace of its line (one delivery at a time, each
 * recorded before the next), and whether they arrived in the order they were recorded.
 * Its baseline, same run: the bare loop POSTing the same bodies one at a time, each
 * answered before the next, signed, recording nothing.
 */
export async function orderedScenario(stack: Stack, receiver: BenchReceiver, count: number) {
  const slow = await slowReceiver();
  try {
    const t = await tenant(stack, receiver, 1, slow.url);
    await call(stack, t.token, 'PATCH', `/v1/installations/${t.installations[0]}/configuration`, { ordered: true });
    const list = events(t, count, 'p');
    const stop = progress('p', () => `delivered ${slow.arrivals.length}/${count}`);
    const counts = { retries: 0 };
    for (let i = 0; i < list.length; i += 500) await ingest(stack, list.slice(i, i + 500), counts);
    await until(() => slow.arrivals.length >= count, 600_000);
    stop();
    const order = slow.arrivals.map((arrival) => arrival.eventId);
    const inOrder = order.every((eventId, i) => eventId === list[i]!.eventId);
    const deliveredPerS = paceOf(slow.arrivals.map((arrival) => arrival.at));
    const posts = slow.arrivals.length;
    slow.arrivals.length = 0;
    const poster = barePoster(slow.url, () => 'whsec_bare', 1);
    const bodies = bodiesOf(list, t.installations[0]!);
    const stopBare = progress('p bare', () => `delivered ${slow.arrivals.length}/${count}`);
    await closedLoop(bodies.length, 1, (i) => poster.post(bodies[i]!));
    stopBare();
    poster.close();
    const barePerS = paceOf(slow.arrivals.map((arrival) => arrival.at));
    return { count, receiverMs: RECEIVER_MS, deliveredPerS: round(deliveredPerS), inOrder, posts, bare: { deliveredPerS: round(barePerS) }, ratio: ratio(deliveredPerS, barePerS) };
  } finally {
    slow.stop();
  }
}

/** (p)'s lines of the bench's report. */
export function orderedReport(p: Awaited<ReturnType<typeof orderedScenario>>, line: (label: string, value: unknown) => string): string[] {
  return [
    `(p) ordered delivery: ${p.count} events at once to an installation with ordered: true, its receiver answering in ${p.receiverMs} ms (embedded default)`,
    line('delivered/s', `${p.deliveredPerS} (target >= 200), in the order recorded: ${p.inOrder} (${p.posts} POSTs)`),
    line('bare loop, one at a time', `${p.bare.deliveredPerS}/s, ratio ${p.ratio}`),
  ];
}
