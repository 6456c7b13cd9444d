import { percentile, progress } from './load';
import { benchOrganization, endpointOf, publishBenchIntegration, type ApiCall } from './runtime';
import type { Stack } from './stack';

const round = (value: number) => Math.round(value * 10) / 10;
/** `/spin` loops for ever (its process is killed at the 10 s deadline); anything else answers at once. */
const SOURCE = "import { createIntegration } from 'integration-platform/runtime';\nexport default createIntegration({ async fetch(request) { if (new URL(request.url).pathname.endsWith('/spin')) for (;;) {} return Response.json({ ok: true }); } });\n";

/** Calls `url` 10 times a second for `seconds`: each call's latency and status. */
export async function tenTimesASecond(label: string, url: string, seconds: number) {
  const calls: { ms: number; status: number }[] = [];
  const stop = progress(label, () => `${calls.length} calls, ${calls.filter((call) => call.status !== 200).length} not 200`);
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const at = performance.now();
    const status = await fetch(url).then(async (answer) => (await answer.arrayBuffer(), answer.status), () => 0);
    calls.push({ ms: performance.now() - at, status });
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 100 - (performance.now() - at))));
  }
  stop();
  const latencies = calls.map((call) => call.ms);
  return { calls: calls.length, failed: calls.filter((call) => call.status !== 200).length, p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)), maxMs: round(Math.max(...latencies)) };
}

/**
 * (h) An organization whose code loops for ever, 11 installations called 11 at a time (its
 * share of the pool spinning, the rest waiting for room), each called again as soon as its
 * deadline killed it, so that its processes keep being started and replaced; beside it
 * another organization's trivial endpoint called 10 times a second. That endpoint's
 * latency alone, then beside: the target is p99 <= 100 ms or 3x alone, whichever is larger.
 */
export async function cpuNeighbourScenario(stack: Stack, call: ApiCall, seconds: number) {
  const owner = await benchOrganization(stack, call, `bench-spin-${process.pid}`);
  await publishBenchIntegration(call, owner, 'bench-spin', SOURCE);
  const quiet = await benchOrganization(stack, call, `bench-quiet-${process.pid}`);
  const spinners = await Promise.all(Array.from({ length: 11 }, () => call(owner.token, 'POST', '/v1/integrations/bench-spin/installations', { target: { org: owner.org } })));
  const endpoint = endpointOf(stack, await call(quiet.token, 'POST', '/v1/integrations/bench-spin/installations', { target: { org: quiet.org } }));
  await fetch(endpoint).then((answer) => answer.arrayBuffer());
  const alone = await tenTimesASecond('h alone', endpoint, seconds);
  let spinning = true;
  let spins = 0;
  const loops = spinners.map(async (installation) => {
    while (spinning) {
      await fetch(`${endpointOf(stack, installation)}/spin`).then((answer) => answer.arrayBuffer(), () => undefined);
      spins += 1;
    }
  });
  const beside = await tenTimesASecond('h beside', endpoint, seconds);
  spinning = false;
  await Promise.all(loops);
  return { alone, beside, spinningCallsEnded: spins, targetP99Ms: Math.max(100, 3 * alone.p99Ms) };
}
