import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

export interface ReceivedRequest {
  /** performance.now() when the request arrived, for measuring waits. */
  at: number;
  method: string;
  /** The request target (path and query). */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The sender's port: requests on one kept-alive connection share it. */
  remotePort?: number;
  /** performance.now() when its answer was sent. */
  answeredAt?: number;
  /** performance.now() when the sender closed the request before its answer (its attempt timed out). */
  abandonedAt?: number;
}

export interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
  /** Answered once this settles, or after `delayMs` if that comes first. */
  until?: Promise<unknown>;
}

/** A real HTTP receiver on 127.0.0.1 whose answer to the n-th request (0-based) is scripted. */
export class ScriptedReceiver {
  readonly requests: ReceivedRequest[] = [];
  private server?: http.Server;
  url = '';

  constructor(private readonly reply: (n: number, request: ReceivedRequest) => Reply = () => ({ status: 200, body: '{"received":true}' })) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const at = performance.now();
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const request: ReceivedRequest = { at, method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), remotePort: req.socket.remotePort };
        const reply = this.reply(this.requests.length, request);
        this.requests.push(request);
        const answer = () => {
          clearTimeout(timer);
          if (res.destroyed || res.headersSent) return;
          request.answeredAt = performance.now();
          res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
          res.end(reply.body ?? '');
        };
        const timer = reply.until && reply.delayMs === undefined ? undefined : setTimeout(answer, reply.delayMs ?? 0);
        void reply.until?.then(answer, answer);
        res.on('close', () => {
          if (request.answeredAt === undefined) request.abandonedAt = performance.now();
        });
      });
    });
    // Idle connections kept a minute (Node's default is 5 s), as receivers behind load balancers keep them:
    // deliveries seconds apart on a loaded machine still share one.
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** A port that was just free and is now closed: connecting to it is refused. */
export async function closedPortUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hook`;
}
