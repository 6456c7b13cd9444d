import { fork } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serializePayload, type SpaceContentUpdated } from '../src/webhooks/events';
import { signatureHeader } from '../src/webhooks/signature';
import { cpuSeconds } from './stack';

/**
 * The floor under (a): the least any Node platform does per event, in a process of its
 * own. It takes `POST /v1/events`, answers 202 at once, and signs and POSTs the payload on
 * over keep-alive; it records nothing, so nothing it accepted survives it. What the
 * platform spends beyond it is the price of durability: the log, the engine's hand-over,
 * the attempt batches and their records.
 */
export interface Relay {
  base: string;
  adminToken: string;
  cpu(): Record<string, number | undefined>;
  stop(): void;
}

/** Starts the relay in a child process, POSTing to `target` signed with `secret`. */
export async function startRelay(target: string, secret: string): Promise<Relay> {
  const child = fork(__filename, [], { env: { ...process.env, RELAY_TARGET: target, RELAY_SECRET: secret }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve(message as number));
    child.once('exit', (code) => reject(new Error(`the relay exited (${code})`)));
  });
  return {
    base: `http://127.0.0.1:${port}`,
    adminToken: 'relay',
    cpu: () => ({ relay: cpuSeconds(child.pid) }),
    stop: () => child.kill(),
  };
}

function serve(target: string, secret: string): void {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const server = http.createServer({ keepAlive: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const event = JSON.parse(Buffer.concat(chunks).toString()) as SpaceContentUpdated & { eventId: string };
      res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ eventId: event.eventId, deliveries: [`${event.eventId}:relay`] }));
      const body = serializePayload(event, event.eventId, 'relay');
      const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-platform-signature': signatureHeader(body, [secret], Math.floor(Date.now() / 1000)) };
      http.request(target, { method: 'POST', agent, headers }, (answer) => answer.resume()).on('error', () => undefined).end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as AddressInfo).port));
}

if (require.main === module) serve(process.env.RELAY_TARGET!, process.env.RELAY_SECRET!);
