import http from 'node:http';
import type { Socket } from 'node:net';
import { MAX_CONNECTIONS_PER_CLIENT } from '../config';

/** How long a client may take to send what the API reads, and how many connections one address may hold. */
export interface HttpLimits {
  /** To send a request's headers. */
  headersMs: number;
  /** To send a whole request, its body included (a 10 MiB body to a public endpoint at 350 KB/s). */
  requestMs: number;
  /** Open connections from one client address; past it a new one is answered 429 and closed. */
  connectionsPerClient: number;
}

/** How long an idle keep-alive connection stays open on the server's side. */
const KEEP_ALIVE_MS = 65_000;

export const DEFAULT_HTTP_LIMITS: HttpLimits = { headersMs: 10_000, requestMs: 30_000, connectionsPerClient: MAX_CONNECTIONS_PER_CLIENT };

/** An answer written on the socket itself, before (or instead of) Koa: the platform's JSON error shape. */
function rawAnswer(socket: Socket, status: number, error: string, message: string): void {
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify({ error, message, details: [] });
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** Node's parser errors, said in the platform's error shape (Node answers them with an empty body). */
function clientErrorAnswer(err: NodeJS.ErrnoException): [number, string, string] {
  if (err.code === 'HPE_HEADER_OVERFLOW') return [431, 'request_header_fields_too_large', 'the request line and headers exceed 16 KiB'];
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'request_timeout', 'the request was not received in time'];
  return [400, 'invalid_request', `the request could not be parsed (${err.code ?? 'bad request'})`];
}

/**
 * The API's HTTP server: slow clients are cut off (headers, then the whole request, each
 * within its limit: slow-body connections used to stay open 100 s and more), one address
 * holds at most so many connections at once, and what Node refuses before Koa sees it
 * (headers too large, a malformed request, a timeout) is answered in the JSON error shape.
 */
export function createHttpServer(listener: http.RequestListener, limits: HttpLimits = DEFAULT_HTTP_LIMITS): http.Server {
  // Checked this often, so that a timeout ends a connection within a second of its limit (Node checks every 30 s by default).
  /** Connections answered 429: a request already sent on one goes no further. */
  const refused = new WeakSet<Socket>();
  const answering = new Set<http.ServerResponse>();
  const server = http.createServer({ requestTimeout: limits.requestMs, headersTimeout: limits.headersMs, connectionsCheckingInterval: 1000 }, (req, res) => {
    if (refused.has(req.socket)) return void res.destroy();
    // Draining: the client's next request must open a connection elsewhere, not find this one gone.
    if (!server.listening) res.setHeader('connection', 'close');
    answering.add(res);
    res.once('close', () => answering.delete(res));
    listener(req, res);
  });
  // Idle keep-alive connections are the client's to close: a server closing one first (Node's
  // 5 s) races the client's next request on it, which then fails unsent ("other side closed":
  // seen in CI when a busy process's timers ran late). Clients' pools let go sooner (undici
  // after 4 s); load balancers' idle timeouts are 60 s.
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  underWay.set(server, answering);
  const perClient = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const client = socket.remoteAddress ?? '';
    const open = (perClient.get(client) ?? 0) + 1;
    perClient.set(client, open);
    socket.once('close', () => {
      const left = perClient.get(client)! - 1;
      if (left) perClient.set(client, left);
      else perClient.delete(client);
    });
    if (open <= limits.connectionsPerClient) return;
    refused.add(socket);
    rawAnswer(socket, 429, 'too_many_connections', `this address holds ${limits.connectionsPerClient} connections already; reuse them (keep-alive) or close some`);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET') return void socket.destroy();
    rawAnswer(socket, ...clientErrorAnswer(err));
  });
  return server;
}

/** Requests under way get this long to be answered when the API stops (ingest answers within 2 s). */
export const DRAIN_GRACE_MS = 3000;

/**
 * Stops the server gracefully: no new connection, idle ones closed, requests under way
 * answered (with `Connection: close`) for up to `graceMs`, then whatever is left cut.
 * Cutting them at once reset ingests that were about to answer 202: their clients could
 * not know whether the event was taken (a rolling restart saw 6 in 4,500).
 */
export function drainServer(server: http.Server, graceMs = DRAIN_GRACE_MS): Promise<void> {
  return new Promise<void>((resolve) => {
    // Answers under way end their connection too; each connection is closed once idle.
    for (const res of underWay.get(server) ?? []) if (!res.headersSent) res.setHeader('connection', 'close');
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    const cut = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearInterval(idle);
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** Each server's answers under way (createHttpServer), for its drain. */
const underWay = new WeakMap<http.Server, Set<http.ServerResponse>>();
