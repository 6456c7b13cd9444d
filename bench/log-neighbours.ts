import { tenTimesASecond } from './cpu-neighbours';
import { benchOrganization, endpointOf, publishBenchIntegration, type ApiCall } from './runtime';
import type { Stack } from './stack';

/** `/flood` writes 20,000 console lines; anything else answers at once. */
const SOURCE =
  "import { createIntegration } from 'integration-platform/runtime';\nexport default createIntegration({ async fetch(request) { if (new URL(request.url).pathname.endsWith('/flood')) { for (let i = 0; i < 20000; i++) console.log('flood line ' + i + ' ' + 'x'.repeat(200)); } return Response.json({ ok: true }); } });\n";

/**
 * (j) An organization whose code logs in a loop (4 installations, each called again as soon
 * as it answers, 20,000 lines of 200 characters a call) beside another organization's
 * trivial endpoint called 10 times a second: that endpoint's latency alone, then beside,
 * and what the log kept of the flood (its bounds drop the rest, counted).
 */
export async function logNeighbourScenario(stack: Stack, call: ApiCall, seconds: number) {
  const owner = await benchOrganization(stack, call, `bench-logger-${process.pid}`);
  await publishBenchIntegration(call, owner, 'bench-logger', SOURCE);
  const quiet = await benchOrganization(stack, call, `bench-calm-${process.pid}`);
  const loggers = await Promise.all(Array.from({ length: 4 }, () => call(owner.token, 'POST', '/v1/integrations/bench-logger/installations', { target: { org: owner.org } })));
  const endpoint = endpointOf(stack, await call(quiet.token, 'POST', '/v1/integrations/bench-logger/installations', { target: { org: quiet.org } }));
  await fetch(endpoint).then((answer) => answer.arrayBuffer());
  const alone = await tenTimesASecond('j alone', endpoint, seconds);
  let flooding = true;
  let floods = 0;
  const loops = loggers.map(async (installation) => {
    while (flooding) {
      await fetch(`${endpointOf(stack, installation)}/flood`).then((answer) => answer.arrayBuffer(), () => undefined);
      floods += 1;
    }
  });
  const beside = await tenTimesASecond('j beside', endpoint, seconds);
  flooding = false;
  await Promise.all(loops);
  const kept = await call(owner.token, 'GET', `/v1/integrations/bench-logger/logs?installation=${loggers[0].id}&limit=1000`);
  return { alone, beside, floods, linesWritten: floods * 20_000, keptOfOneInstallationPage: kept.items.length, targetP99Ms: Math.max(100, 3 * alone.p99Ms) };
}
