import { percentile, progress } from './load';
import { benchOrganization, endpointOf, publishBenchIntegration, type ApiCall } from './runtime';
import type { Stack } from './stack';

const round = (value: number) => Math.round(value * 10) / 10;
/** `/spin` loops for ever (its process is killed at the 10 s deadline); anything else answers at once. */
const SOURCE = "import { createIntegration } from 'integration-platform/runtime';\nexport default createIntegration({ async fetch(request) { if (new URL(request.url).pathname.endsWith('/spin')) for (;;) {} return Response.json({ ok: true }); } });\n";

/** Calls `url` 10 times a second for `seconds`: each call's latency and status. */
async function tenTimesASecond(label: string, url: string, seconds: number) {
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
 * One organization's installations of `integration` (public, of `source`) each called at
 * `path` again as soon as it answers, beside another organization's installation of it
 * called at its root 10 times a second: that endpoint's latency alone, then beside, and
 * how many of the noisy calls ended meanwhile. Target: p99 <= 100 ms or 3x alone.
 */
export async function neighbourScenario(stack: Stack, call: ApiCall, options: { label: string; integration: string; source: string; installations: number; path: string; seconds: number }) {
  const { label, integration, installations, path, seconds } = options;
  const owner = await benchOrganization(stack, call, `${integration}-${process.pid}`);
  await publishBenchIntegration(call, owner, integration, options.source);
  const quiet = await benchOrganization(stack, call, `${integration}-quiet-${process.pid}`);
  const install = (org: { org: string; token: string }) => call(org.token, 'POST', `/v1/integrations/${integration}/installations`, { target: { org: org.org } });
  const noisy = await Promise.all(Array.from({ length: installations }, () => install(owner)));
  const endpoint = endpointOf(stack, await install(quiet));
  await fetch(endpoint).then((answer) => answer.arrayBuffer());
  const alone = await tenTimesASecond(`${label} alone`, endpoint, seconds);
  let running = true;
  let ended = 0;
  const loops = noisy.map(async (installation) => {
    while (running) {
      await fetch(`${endpointOf(stack, installation)}${path}`).then((answer) => answer.arrayBuffer(), () => undefined);
      ended += 1;
    }
  });
  const beside = await tenTimesASecond(`${label} beside`, endpoint, seconds);
  running = false;
  await Promise.all(loops);
  return { owner, noisy, alone, beside, noisyCallsEnded: ended, targetP99Ms: Math.max(100, 3 * alone.p99Ms) };
}

/**
 * (h) An organization whose code loops for ever, 11 installations called 11 at a time (its
 * share of the pool spinning, the rest waiting for room), each called again as soon as its
 * deadline killed it, so that its processes keep being started and replaced; beside it
 * another organization's trivial endpoint called 10 times a second.
 */
export async function cpuNeighbourScenario(stack: Stack, call: ApiCall, seconds: number) {
  const { alone, beside, noisyCallsEnded, targetP99Ms } = await neighbourScenario(stack, call, { label: 'h', integration: 'bench-spin', source: SOURCE, installations: 11, path: '/spin', seconds });
  return { alone, beside, spinningCallsEnded: noisyCallsEnded, targetP99Ms };
}
