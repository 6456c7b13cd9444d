import http from 'node:http';
import https from 'node:https';
import { Response as MiniflareResponse, type Request as MiniflareRequest } from 'miniflare';
import { portOf, type DestinationGuard } from '../net/destination-guard';
import { HOP_BY_HOP } from '../net/hop-by-hop';

/** A response larger than this is cut off: an integration's fetch is no download manager. */
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
const EGRESS_TIMEOUT_MS = 30_000;

const refused = (message: string, status = 403) => new MiniflareResponse(JSON.stringify({ error: 'egress_refused', message }), { status, headers: { 'content-type': 'application/json' } });

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
      return refused('not a URL', 400);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return refused(`${url.protocol} is not allowed; only http and https`);
    try {
      guard.assertLiteral(url);
    } catch (err) {
      return refused((err as Error).message);
    }
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : Buffer.from(await request.arrayBuffer());
    // cf-worker: workerd's own marker of the calling worker.
    const headers = Object.fromEntries([...request.headers].filter(([name]) => !HOP_BY_HOP.has(name) && name !== 'cf-worker'));
    return new Promise<MiniflareResponse>((resolve) => {
      const client = url.protocol === 'https:' ? https : http;
      const outgoing = client.request(url, { method: request.method, headers, agent: url.protocol === 'https:' ? agents.https : agents.http, lookup: guard.lookup(portOf(url)), timeout: EGRESS_TIMEOUT_MS });
      outgoing.on('timeout', () => outgoing.destroy(new Error('no answer within 30 s')));
      outgoing.on('error', (err: NodeJS.ErrnoException) => resolve(refused(err.code === 'EBLOCKED' ? err.message : `the request failed: ${err.message}`, err.code === 'EBLOCKED' ? 403 : 502)));
      outgoing.on('response', (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) response.destroy(new Error('the response exceeds 10 MiB'));
          else chunks.push(chunk);
        });
        response.on('error', (err) => resolve(refused(err.message, 502)));
        response.on('end', () => {
          const answer = new Headers();
          for (const [name, value] of Object.entries(response.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) answer.set(name, Array.isArray(value) ? value.join(', ') : value);
          const status = response.statusCode ?? 502;
          resolve(new MiniflareResponse(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: [...answer] }));
        });
      });
      outgoing.end(body);
    });
  };
}
