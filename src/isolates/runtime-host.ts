import { LOG_LIMITS } from '../integration-logs/log-sink';

/** How long work an integration hands to waitUntil may go on after its response. */
export const WAIT_UNTIL_MS = 30_000;

/** The header by which egress marks its answer to a request that never got one (the destination unreachable). */
export const EGRESS_FAILURE_HEADER = 'x-platform-egress-failure';

/** The header by which the platform tells the host what an invocation is: `{kind, eventId?, traceId?}` as JSON. */
export const INVOCATION_HEADER = 'x-platform-invocation';
/** Console lines an isolate holds between sends at most; past them it counts what it drops. */
export const PENDING_LOG_LINES = 1000;
/** Lines a send carries at most, and their characters (a character takes at most 6 bytes of JSON). */
export const LINES_PER_SEND = 500;
const SEND_CHARS = 256 * 1024;
/** A send's body at most, as the binding takes it. */
export const MAX_SEND_BYTES = SEND_CHARS * 6 + LINES_PER_SEND * 512;

/**
 * Evaluated before the integration's bundle, so that its own top level is seen too.
 *
 * Its `fetch` rejects with a TypeError, as fetch does, when the destination could not be
 * reached (egress answers that with a 502 marked EGRESS_FAILURE_HEADER). Code that catches
 * a failed fetch would otherwise take the platform's 502 for the destination's answer, and
 * report success where nothing was sent.
 *
 * Its console is the integration's log: each line is kept with the invocation it came
 * from (an AsyncLocalStorage the host enters per call, which waitUntil work inherits) and
 * sent to the `platformLogs` binding when the host flushes. Lines past PENDING_LOG_LINES
 * are counted, not kept: a logging loop costs the isolate no memory.
 */
export const RUNTIME_PRELUDE_SOURCE = `
import { AsyncLocalStorage } from 'node:async_hooks';

const platformFetch = globalThis.fetch;
globalThis.fetch = async function fetch(input, init) {
  const response = await platformFetch(input, init);
  if (!response.headers.has('${EGRESS_FAILURE_HEADER}')) return response;
  const { message } = await response.json();
  throw new TypeError('fetch failed: ' + message);
};

export const invocation = new AsyncLocalStorage();
let pending = [];
let dropped = 0;
// One past the platform's bound, so that the platform marks the line as cut.
const MAX_CHARS = ${LOG_LIMITS.lineChars + 1};
// What one send carries at most: a body within the binding's bound whatever the characters.
const SEND_CHARS = ${SEND_CHARS};
const text = (value) => {
  try {
    if (typeof value === 'string') return value;
    if (value instanceof Error) return String(value.stack || value);
    const json = JSON.stringify(value);
    return json === undefined ? String(value) : json;
  } catch {
    try {
      return String(value);
    } catch {
      return '[unprintable]';
    }
  }
};
// Never throws: what the code logs cannot break the platform's own answer.
export function log(level, args) {
  if (pending.length >= ${PENDING_LOG_LINES}) return void dropped++;
  const { kind = 'load', eventId, traceId } = invocation.getStore() ?? {};
  let message = args.map(text).join(' ');
  if (message.length > MAX_CHARS) message = message.slice(0, MAX_CHARS);
  pending.push({ time: Date.now(), level, kind, eventId, traceId, message });
}
for (const [method, level] of [['debug', 'debug'], ['trace', 'debug'], ['log', 'info'], ['info', 'info'], ['warn', 'warn'], ['error', 'error']]) {
  console[method] = (...args) => log(level, args);
}
export async function flush(binding) {
  while (pending.length || dropped) {
    let count = 0;
    for (let chars = 0; count < pending.length && count < ${LINES_PER_SEND} && (count === 0 || chars + pending[count].message.length <= SEND_CHARS); count++) chars += pending[count].message.length;
    const lines = pending.splice(0, count);
    const body = JSON.stringify({ lines, dropped });
    const counted = dropped;
    dropped = 0;
    if (!binding) continue;
    // Lines the platform did not take are counted as dropped in the next send.
    const taken = await binding.fetch('http://logs/', { method: 'POST', body }).then((answer) => answer.ok, () => false);
    if (!taken) return void (dropped += counted + lines.length);
  }
}
`;

/**
 * The main module of every runtime isolate: platform code around the integration's bundle
 * (`integration.js`, its default export from createIntegration()). It hands the bundle
 * only the platform's API binding, bounds waitUntil work to 30 s, and answers 500 without
 * a stack whatever escapes: the stack goes to the integration's log, with whatever failed
 * in its waitUntil work. The call's lines are sent once it is answered, and again once its
 * waitUntil work has ended.
 */
export const RUNTIME_HOST_SOURCE = `
import { invocation, log, flush } from './prelude.js';
import integration from './integration.js';

const entry = integration && typeof integration.fetch === 'function' ? integration : undefined;
const NO_ENTRY = 'the script\\u2019s default export does not come from createIntegration()';
const failure = (message) => new Response(JSON.stringify({ error: message }), { status: 500, headers: { 'content-type': 'application/json' } });
const described = (header) => {
  try {
    const { kind, eventId, traceId } = JSON.parse(header ?? '{}');
    return { kind, eventId, traceId };
  } catch {
    return {};
  }
};

export default {
  fetch(request, env, ctx) {
    return invocation.run(described(request.headers.get('${INVOCATION_HEADER}')), async () => {
      const background = [];
      const bounded = {
        waitUntil(promise) {
          const done = Promise.resolve(promise).then(() => undefined, (error) => log('error', ['waitUntil work failed:', error]));
          const work = Promise.race([done, new Promise((resolve) => setTimeout(resolve, ${WAIT_UNTIL_MS}))]);
          background.push(work);
          ctx.waitUntil(work);
        },
      };
      let response;
      if (!entry) {
        log('error', [NO_ENTRY]);
        response = failure(NO_ENTRY);
      } else {
        try {
          response = await entry.fetch(request, { platformApi: env.platformApi }, bounded);
        } catch (error) {
          log('error', ['uncaught:', error]);
          response = failure('Internal server error');
        }
      }
      ctx.waitUntil((async () => {
        await flush(env.platformLogs);
        // Work handed over later (from inside waitUntil work) is waited for too, within the
        // bound of the call's own: past it the pool takes a send for work left behind.
        const bound = new Promise((resolve) => setTimeout(resolve, ${WAIT_UNTIL_MS}, 'bound'));
        for (let i = 0; i < background.length; i++) if ((await Promise.race([background[i], bound])) === 'bound') break;
        await flush(env.platformLogs);
      })());
      return response;
    });
  },
};
`;
