import http from 'node:http';
import https from 'node:https';
import { ATTEMPT_TIMEOUT_MS, parseRetryAfter, type AttemptErrorClass, type AttemptResult } from '../webhooks/schedule';
import { BlockedDestinationError } from '../net/addresses';
import { portOf, type DestinationGuard } from '../net/destination-guard';
import { parseWebhookUrl } from '../webhooks/url-guard';

const RESPONSE_BODY_KEPT = 1024;
/** Past this a response body is not drained for connection reuse; the socket is dropped. */
const RESPONSE_BODY_DRAINED = 64 * 1024;

export interface HttpAttempt {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Whose attempt (an installation): its sockets to a host are its own (see createAgents). */
  pool?: string;
}

export interface HttpAttemptOptions {
  guard: DestinationGuard;
  timeoutMs?: number;
  agents: { http: http.Agent; https: https.Agent };
  /** Aborted when the worker stops: the request ends at once, `interrupted`. */
  signal?: AbortSignal;
}

/** What ends an attempt whose worker stopped before its answer. */
export class InterruptedError extends Error {}

/** An attempt interrupted before its request went out (AttemptResult.unsent): not recorded, made again on another worker. */
export class UnsentError extends Error {}

/** The call's answer, or an InterruptedError once `stopping` aborts (the call runs on; its answer is not read). */
export function unlessStopped<T>(call: Promise<T>, stopping: AbortSignal): Promise<T> {
  if (stopping.aborted) return Promise.reject(new InterruptedError('the worker stopped before the answer came'));
  let stop = () => undefined as void;
  const stopped = new Promise<never>((_, reject) => (stop = () => reject(new InterruptedError('the worker stopped before the answer came'))));
  stopping.addEventListener('abort', stop);
  return Promise.race([call, stopped]).finally(() => stopping.removeEventListener('abort', stop));
}

/** Request options that name the pool an attempt's socket comes from. */
type Pooled<Options> = Options & { pool?: string };
const poolName = (hostName: string, pool: string | undefined) => (pool ? `${hostName}:${pool}` : hostName);

/**
 * Keep-alive agents whose pools are per host and per installation, `maxSockets` each: on a
 * host many installations share (a SaaS's webhook host), one whose URL hangs holds only
 * its own sockets, and another's requests never wait behind them in the pool until their
 * attempt's timeout ends them unsent.
 */
export function createAgents(maxSockets = 256): HttpAttemptOptions['agents'] {
  class HttpAgent extends http.Agent {
    override getName(options?: Pooled<http.ClientRequestArgs>): string {
      return poolName(super.getName(options), options?.pool);
    }
  }
  class HttpsAgent extends https.Agent {
    override getName(options?: Pooled<https.RequestOptions>): string {
      return poolName(super.getName(options), options?.pool);
    }
  }
  return { http: new HttpAgent({ keepAlive: true, maxSockets }), https: new HttpsAgent({ keepAlive: true, maxSockets }) };
}

/**
 * One POST of a webhook: no redirects followed, a hard deadline over the whole exchange,
 * the first 1 KiB of the answer kept. Never throws: every ending is an AttemptResult.
 */
export async function postOnce(attempt: HttpAttempt, options: HttpAttemptOptions): Promise<AttemptResult> {
  const started = Date.now();
  const base = { startedAt: new Date(started).toISOString(), url: attempt.url };
  const ended = (fields: Partial<AttemptResult>): AttemptResult => ({ ...base, durationMs: Date.now() - started, ...fields });
  let url: URL;
  try {
    url = parseWebhookUrl(attempt.url);
    options.guard.assertLiteral(url);
  } catch (err) {
    return ended({ error: 'blocked_destination', errorMessage: (err as Error).message });
  }
  return new Promise<AttemptResult>((resolve) => {
    const client = url.protocol === 'https:' ? https : http;
    const requestOptions: Pooled<https.RequestOptions> = {
      method: 'POST',
      headers: { ...attempt.headers, 'Content-Length': Buffer.byteLength(attempt.body).toString() },
      agent: url.protocol === 'https:' ? options.agents.https : options.agents.http,
      lookup: options.guard.lookup(portOf(url)),
      pool: attempt.pool,
    };
    const request = client.request(url, requestOptions);
    const deadline = setTimeout(() => request.destroy(Object.assign(new Error('no response within the attempt timeout'), { code: 'ETIMEDOUT' })), options.timeoutMs ?? ATTEMPT_TIMEOUT_MS);
    // Once its socket is connected the request may be on the wire: an interruption then is
    // recorded, never taken for unsent. ('finish' comes a turn of the loop after the bytes
    // left: on a loaded machine a receiver had a request the log never held.)
    let handedOver = false;
    request.once('socket', (socket) => {
      if (socket.connecting) socket.once('connect', () => (handedOver = true));
      else handedOver = true;
    });
    const interrupt = () => request.destroy(new InterruptedError('the worker stopped before the answer came'));
    options.signal?.addEventListener('abort', interrupt);
    if (options.signal?.aborted) interrupt();
    const settle = (result: AttemptResult) => {
      clearTimeout(deadline);
      options.signal?.removeEventListener('abort', interrupt);
      resolve(result);
    };
    request.on('error', (err: NodeJS.ErrnoException) => {
      const unsent = err instanceof InterruptedError && !handedOver;
      settle(ended({ error: classifyError(err), errorMessage: unsent ? 'the worker stopped before the request went out' : err.message, ...(unsent && { unsent }) }));
    });
    request.on('response', (response) => {
      const kept: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        if (size < RESPONSE_BODY_KEPT) kept.push(chunk.subarray(0, RESPONSE_BODY_KEPT - size));
        size += chunk.length;
        if (size > RESPONSE_BODY_DRAINED) response.destroy();
      });
      const done = () => {
        const statusCode = response.statusCode ?? 0;
        const retryAfter = statusCode === 429 || statusCode === 503 ? parseRetryAfter(response.headers['retry-after'], Date.now()) : undefined;
        settle(ended({ statusCode, responseBody: Buffer.concat(kept).toString('utf8'), retryAfterMs: retryAfter }));
      };
      response.on('end', done);
      response.on('close', done);
      response.on('error', () => done());
    });
    request.end(attempt.body);
  });
}

function classifyError(err: NodeJS.ErrnoException): AttemptErrorClass {
  if (err instanceof BlockedDestinationError) return 'blocked_destination';
  if (err instanceof InterruptedError) return 'interrupted';
  const code = err.code ?? '';
  if (code === 'ETIMEDOUT') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || err.message === 'socket hang up') return 'connection_reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_failure';
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return 'tls_failure';
  return 'network_error';
}
