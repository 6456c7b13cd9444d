import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';

// No import of the other test supports: this file is also the receiver's process, which loads only what it needs.

/**
 * What the receiver saw of one request. Its process reports it once the request is over,
 * its times in ms since 1970; ReceiverProcess keeps them on its own performance clock.
 */
export interface ReceivedEvent {
  eventId: string;
  at: number;
  answeredAt?: number;
  abandonedAt?: number;
}

const now = () => performance.timeOrigin + performance.now();

function serve(): void {
  const server = http.createServer((req, res) => {
    const at = now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let eventId = '';
      try {
        eventId = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { eventId?: unknown }).eventId ?? '');
      } catch {
        // Not an event: reported with no id.
      }
      const report: ReceivedEvent = { eventId, at };
      if (res.destroyed) return void process.send!({ ...report, abandonedAt: now() });
      res.on('close', () => {
        if (report.answeredAt === undefined) report.abandonedAt = now();
        process.send!(report);
      });
      report.answeredAt = now();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"received":true}');
    });
  });
  // Idle connections kept a minute, as receivers behind load balancers keep them.
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  // Its parent gone (killed, say), it goes too.
  process.on('disconnect', () => process.exit(0));
}

/**
 * A receiver that answers 200 to everything, in a process of its own that goes first for the
 * CPU where it may (root, as CI runs): it plays a receiver on another machine. Beside a whole
 * deployment on 2 cores, in the test's own process (with its producer), it accepted
 * connections tens of seconds late, its accept queue full, and every attempt of hundreds of
 * deliveries timed out, the platform charged with it (CI's stop 37 and runs here beside a busy loop: 3 to 2,814 failed).
 */
export class ReceiverProcess {
  url = '';
  private child?: ChildProcess;
  /** As reported: in the order the requests ended. */
  private readonly reported: ReceivedEvent[] = [];
  private sorted = true;

  /** The requests it saw, in the order they arrived. */
  get requests(): readonly ReceivedEvent[] {
    if (!this.sorted) this.reported.sort((a, b) => a.at - b.at);
    this.sorted = true;
    return this.reported;
  }

  async start(): Promise<this> {
    const child = fork(__filename, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    this.child = child;
    const toHere = (ms: number | undefined) => (ms === undefined ? undefined : ms - performance.timeOrigin);
    const port = await new Promise<number>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the receiver process exited (${code}) before it listened`)));
      child.once('error', reject);
      child.on('message', (message: ReceivedEvent | { port: number }) => {
        if ('port' in message) return resolve(message.port);
        this.sorted = false;
        this.reported.push({ eventId: message.eventId, at: toHere(message.at)!, answeredAt: toHere(message.answeredAt), abandonedAt: toHere(message.abandonedAt) });
      });
    });
    firstForCpu(child.pid!);
    this.url = `http://127.0.0.1:${port}/hook`;
    return this;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

/** Every thread of a process at nice -10, if permitted (Linux's setpriority is per thread). */
function firstForCpu(pid: number): void {
  try {
    for (const thread of readdirSync(`/proc/${pid}/task`)) setPriority(Number(thread), -10);
  } catch {
    // Not permitted (not root) or not Linux: it runs at the test's priority.
  }
}

if (require.main === module) serve();
