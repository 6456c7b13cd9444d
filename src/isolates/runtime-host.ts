/** How long work an integration hands to waitUntil may go on after its response. */
export const WAIT_UNTIL_MS = 30_000;

/** The header by which egress marks its answer to a request that never got one (the destination unreachable). */
export const EGRESS_FAILURE_HEADER = 'x-platform-egress-failure';

/**
 * Evaluated before the integration's bundle: its `fetch` rejects with a TypeError, as
 * fetch does, when the destination could not be reached (egress answers that with a 502
 * marked EGRESS_FAILURE_HEADER). Code that catches a failed fetch would otherwise take the
 * platform's 502 for the destination's answer, and report success where nothing was sent.
 */
export const RUNTIME_PRELUDE_SOURCE = `
const platformFetch = globalThis.fetch;
globalThis.fetch = async function fetch(input, init) {
  const response = await platformFetch(input, init);
  if (!response.headers.has('${EGRESS_FAILURE_HEADER}')) return response;
  const { message } = await response.json();
  throw new TypeError('fetch failed: ' + message);
};
`;

/**
 * The main module of every runtime isolate: platform code around the integration's bundle
 * (`integration.js`, its default export from createIntegration()). It hands the bundle
 * only the platform's API binding, bounds waitUntil work to 30 s, and answers 500 without
 * a stack whatever escapes.
 */
export const RUNTIME_HOST_SOURCE = `
import './prelude.js';
import integration from './integration.js';

const entry = integration && typeof integration.fetch === 'function' ? integration : undefined;
const failure = (message) => new Response(JSON.stringify({ error: message }), { status: 500, headers: { 'content-type': 'application/json' } });

export default {
  async fetch(request, env, ctx) {
    if (!entry) return failure('the script\\u2019s default export does not come from createIntegration()');
    const bounded = {
      waitUntil(promise) {
        const done = Promise.resolve(promise).then(() => undefined, () => undefined);
        ctx.waitUntil(Promise.race([done, new Promise((resolve) => setTimeout(resolve, ${WAIT_UNTIL_MS}))]));
      },
    };
    try {
      return await entry.fetch(request, { platformApi: env.platformApi }, bounded);
    } catch {
      return failure('Internal server error');
    }
  },
};
`;
