import { neighbourScenario } from './cpu-neighbours';
import type { ApiCall } from './runtime';
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
  const { owner, noisy, alone, beside, noisyCallsEnded, targetP99Ms } = await neighbourScenario(stack, call, { label: 'j', integration: 'bench-logger', source: SOURCE, installations: 4, path: '/flood', seconds });
  const kept = await call(owner.token, 'GET', `/v1/integrations/bench-logger/logs?installation=${noisy[0].id}&limit=1000`);
  return { alone, beside, floods: noisyCallsEnded, linesWritten: noisyCallsEnded * 20_000, keptOfOneInstallationPage: kept.items.length, targetP99Ms };
}
