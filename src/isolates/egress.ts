import http from 'node:http';
import https from 'node:https';
import { Response as MiniflareResponse, type Request as MiniflareRequest } from 'miniflare';
import { portOf, type DestinationGuard } from '../net/destination-guard';
import { HOP_BY_HOP } from '../net/hop-by-hop';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { MAX_EXCHANGE_BYTES } from './workerd-process';
import { BodyTooLargeError, readBounded } from '../net/bounded-body';
import { EGRESS_FAILURE_HEADER } from './runtime-host';

const EGRESS_TIMEOUT_MS = 30_000;
/** A request body or response past MAX_EXCHANGE_BYTES is cut off: an integration's fetch is no file transfer. */
const TOO_LARGE = `exceeds ${MAX_EXCHANGE_BYTES / 1024 / 1024} MiB`;

/** The body of a refusal of what an isolate asked for (its fetch, or its API binding). */
export const refusalBody = (message: string) => JSON.stringify({ error: 'egress_refused', message });
/** What an isolate's fetch gets when the platform refuses it. */
export const egressRefusal = (message: string, status = 403) => new MiniflareResponse(refusalBody(message), { status, headers: { 'content-type': 'application/json' } });

/** The destination could not be reached: the isolate's fetch rejects (see RUNTIME_PRELUDE_SOURCE). */
const unreachable = (message: string) => new MiniflareResponse(refusalBody(message), { status: 502, headers: { 'content-type': 'application/json', [EGRESS_FAILURE_HEADER]: '1' } });

/**
 * The isolate's outbound fetch (its only way out): http and https only, each destination
 * judged by the egress guard before connecting and again on every address DNS gives at
 * connection time, redirects not followed (the isolate sees them and each hop comes back
 * here). Raw sockets never get this far: workerd refuses `connect()` through a service.
 */
export function createEgress(guard: DestinationGuard) {
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  return async (request: MiniflareRequest): Promise<MiniflareResponse> => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return egressRefusal('not a URL', 400);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return egressRefusal(`${url.protocol} is not allowed; only http and https`);
    try {
      guard.assertLiteral(url);
    } catch (err) {
      return egressRefusal((err as Error).message);
    }
    // Streamed, not read whole first: counted as it goes out, after the guard has judged the destination.
    const body = request.method === 'GET' || request.method === 'HEAD' || !request.body ? undefined : Readable.fromWeb(request.body as NodeReadableStream<Uint8Array>);
    // cf-worker: workerd's own marker of the calling worker.
    const headers = Object.fromEntries([...request.headers].filter(([name]) => !HOP_BY_HOP.has(name) && name !== 'cf-worker'));
    return new Promise<MiniflareResponse>((resolve) => {
      const client = url.protocol === 'https:' ? https : http;
      const outgoing = client.request(url, { method: request.method, headers, agent: url.protocol === 'https:' ? agents.https : agents.http, lookup: guard.lookup(portOf(url)), timeout: EGRESS_TIMEOUT_MS });
      outgoing.on('timeout', () => outgoing.destroy(new Error('no answer within 30 s')));
      outgoing.on('error', (err: NodeJS.ErrnoException) => {
        // Drained, not destroyed: cancelling miniflare's request stream mid-read throws in it,
        // and one left unread holds the isolate's next requests. Nothing drained is kept.
        body?.unpipe(outgoing).resume();
        resolve(err.code === 'EBLOCKED' ? egressRefusal(err.message) : err.code === 'ETOOLARGE' ? egressRefusal(err.message, 413) : unreachable(`${url.host}: ${err.message}`));
      });
      outgoing.on('response', (response) => {
        readBounded(response, MAX_EXCHANGE_BYTES).then(
          (body) => {
            const answer = new Headers();
            // The failure marker is the platform's word alone: a destination's own is dropped.
            for (const [name, value] of Object.entries(response.headers)) if (value !== undefined && !HOP_BY_HOP.has(name) && name !== EGRESS_FAILURE_HEADER) answer.set(name, Array.isArray(value) ? value.join(', ') : value);
            const status = response.statusCode ?? 502;
            resolve(new MiniflareResponse(status === 204 || status === 304 ? null : body, { status, headers: [...answer] }));
          },
          (err: Error) => resolve(egressRefusal(err instanceof BodyTooLargeError ? `the response ${TOO_LARGE}` : err.message, 502)),
        );
      });
      if (!body) return void outgoing.end();
      let sent = 0;
      body.on('data', (chunk: Buffer) => {
        sent += chunk.length;
        if (sent > MAX_EXCHANGE_BYTES) outgoing.destroy(Object.assign(new Error(`the request body ${TOO_LARGE}`), { code: 'ETOOLARGE' }));
      });
      body.on('error', (err) => outgoing.destroy(err));
      body.pipe(outgoing);
    });
  };
}
