import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { connect } from 'node:net';
import { treeCpuSecondsOf } from '../src/system/procfs';
import { freePort } from '../src/temporal/dev-server';
import type { SpaceContentUpdated } from '../src/webhooks/events';
import { createTestDatabase, startPostgres } from '../test/support/postgres';
import { closedLoop, httpClient } from './load';
import type { BenchReceiver } from './receiver';
import { events, ratio, throughPlatform, type Ingesting, type Run } from './drive';
import { rssMiB, treePssMiB } from './stack';

/** svix-server's queues: in its process, or Redis (appendonly, fsync every second: its crash-durable configuration). */
type SvixQueue = 'memory' | 'redis';

interface SvixStack extends Ingesting {
  rss(): Record<string, number | undefined>;
  stop(): Promise<void>;
}

const svixClient = httpClient(256);

/** `redis-server` on PATH or in Debian's place, if installed. */
function redisServer(): string | undefined {
  return [...(process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'redis-server')), '/usr/bin/redis-server'].find((file) => existsSync(file));
}

/** Whether something accepts connections on the port. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
    socket.on('error', () => resolve(false));
  });

async function until(ready: () => Promise<boolean>, what: string, child: ChildProcess): Promise<void> {
  for (const deadline = Date.now() + 60_000; !(await ready().catch(() => false)); ) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${what} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * svix-server (BENCH_SVIX_SERVER: a binary built from svix/svix-webhooks) on a throwaway
 * PostgreSQL started as the topology's is, one application, one endpoint at the bench's
 * receiver; each event is a message whose payload is the event (its eventId Svix's
 * idempotency key, so a retried POST is not a second message).
 */
async function startSvix(binary: string, queue: SvixQueue, receiver: BenchReceiver): Promise<SvixStack> {
  const postgres = await startPostgres();
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-bench-svix-'));
  try {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      SVIX_DB_DSN: await createTestDatabase(postgres.url, 'svix'),
      SVIX_JWT_SECRET: 'bench-jwt-secret',
      SVIX_QUEUE_TYPE: queue,
      SVIX_CACHE_TYPE: queue,
      SVIX_LISTEN_ADDRESS: `127.0.0.1:${port}`,
      SVIX_WHITELIST_SUBNETS: '[127.0.0.1/32]',
      SVIX_LOG_LEVEL: 'info',
    };
    if (queue === 'redis') {
      const redisPort = await freePort();
      const redis = spawn(redisServer()!, ['--port', String(redisPort), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec'], { stdio: 'ignore' });
      children.push(redis);
      env.SVIX_REDIS_DSN = `redis://127.0.0.1:${redisPort}`;
      await until(() => listening(redisPort), 'redis-server', redis);
    }
    await promisify(execFile)(binary, ['migrate'], { env });
    const token = /Token \(Bearer\): (\S+)/.exec((await promisify(execFile)(binary, ['jwt', 'generate'], { env })).stdout)?.[1];
    if (!token) throw new Error('svix-server jwt generate printed no token');
    const server = spawn(binary, [], { env, stdio: 'ignore' });
    children.unshift(server);
    const base = `http://127.0.0.1:${port}`;
    const api = async (method: string, route: string, body?: unknown) => {
      const answer = await svixClient.send(`${base}${route}`, method, { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body === undefined ? undefined : JSON.stringify(body));
      if (answer.status >= 300) throw new Error(`svix ${method} ${route}: ${answer.status} ${answer.text}`);
      return JSON.parse(answer.text) as Record<string, string>;
    };
    await until(async () => (await svixClient.send(`${base}/api/v1/health/`, 'GET', {})).status < 300, 'svix-server', server);
    await api('POST', '/api/v1/app/', { name: 'bench', uid: 'bench' });
    const endpoint = await api('POST', '/api/v1/app/bench/endpoint/', { url: receiver.url, version: 1 });
    receiver.secrets.push((await api('GET', `/api/v1/app/bench/endpoint/${endpoint.id}/secret/`)).key!);
    const processes = () => ({ 'svix-server': server.pid, 'postgresql (all backends)': postgres.pid, ...(children[1] && { redis: children[1].pid }) });
    return {
      base,
      adminToken: token,
      async send(list: SpaceContentUpdated[], counts: { retries: number }) {
        for (;;) {
          const started = performance.now();
          const answer = await svixClient.send(`${base}/api/v1/app/bench/msg/`, 'POST', { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, JSON.stringify({ eventType: list[0]!.type, eventId: list[0]!.eventId, payload: list[0] })).catch(() => undefined);
          // 409: the eventId is taken, by this message's earlier try.
          if (answer && (answer.status < 300 || answer.status === 409)) return performance.now() - started;
          if (answer && answer.status < 500 && answer.status !== 429) throw new Error(`svix answered ${answer.status} ${answer.text}`);
          if (server.exitCode !== null) throw new Error(`svix-server exited (${server.exitCode})`);
          counts.retries += 1;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      },
      cpu: () => Object.fromEntries(Object.entries(processes()).map(([name, pid]) => [name, pid ? treeCpuSecondsOf(pid) : undefined])),
      rss: () => ({ 'svix-server': rssMiB(server.pid), 'postgresql (all backends, PSS)': treePssMiB(postgres.pid), ...(children[1] && { redis: rssMiB(children[1].pid) }) }),
      async stop() {
        await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : (child.once('exit', resolve), child.kill('SIGKILL'))))));
        await postgres.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    for (const child of children) child.kill('SIGKILL');
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

const figures = (run: Run, n: number) => ({
  deliveredPerS: run.deliveredPerS,
  endToEndMs: run.endToEndMs,
  ackMs: run.ackMs,
  duplicates: run.duplicates,
  cpuMsPerEvent: Math.round((Object.entries(run.cpuS).filter(([name]) => !name.startsWith('bench')).reduce((sum, [, s]) => sum + s, 0) * 1000 * 100) / n) / 100,
});

/**
 * (m) Svix beside ours (BENCH_SVIX_SERVER set): the same driver, receiver and events as (k),
 * 1,000 one at a time and 20,000 at 64 in flight, on its memory queue and on Redis (when
 * redis-server is installed). Without a binary the bench prints ours and the bare loop.
 */
export async function svixScenario(binary: string, receiver: BenchReceiver, scale: number) {
  const oneAtATime = Math.round(1000 * scale);
  const manyInFlight = Math.round(20_000 * scale);
  const out: Partial<Record<SvixQueue, { oneAtATime: ReturnType<typeof figures>; inFlight64: ReturnType<typeof figures>; rssAfterMiB: Record<string, number | undefined> }>> = {};
  for (const queue of ['memory', 'redis'] as const) {
    if (queue === 'redis' && !redisServer()) continue;
    process.stderr.write(`bench: starting svix-server (${queue} queue)\n`);
    const svix = await startSvix(binary, queue, receiver);
    try {
      const t = { org: `svix-${queue}`, token: '', installations: [] };
      const one = events(t, oneAtATime, `m1${queue}`);
      receiver.reset();
      const oneRun = await throughPlatform(svix, receiver, `m svix ${queue}, one at a time`, one, (task) => closedLoop(one.length, 1, task));
      const many = events(t, manyInFlight, `m64${queue}`);
      receiver.reset();
      const manyRun = await throughPlatform(svix, receiver, `m svix ${queue}, 64 in flight`, many, (task) => closedLoop(many.length, 64, task));
      out[queue] = { oneAtATime: figures(oneRun, oneAtATime), inFlight64: figures(manyRun, manyInFlight), rssAfterMiB: svix.rss() };
    } finally {
      await svix.stop();
      receiver.secrets.pop();
    }
  }
  return out;
}

type Ours = { deliveredPerS: number; endToEndMs: { p50: number; p99: number } };

/** (m)'s lines: Svix's figures, and ours (from (k)) against them. */
export function svixReport(m: Awaited<ReturnType<typeof svixScenario>>, ours: { embeddedOne?: Ours; embedded64?: Ours; topologyOne?: Ours; topology64?: Ours }, line: (label: string, value: unknown) => string): string[] {
  const run = (f: { deliveredPerS: number; endToEndMs: { p50: number; p99: number }; cpuMsPerEvent?: number }) => `${f.deliveredPerS}/s, p50 / p99 ${f.endToEndMs.p50} / ${f.endToEndMs.p99} ms${f.cpuMsPerEvent === undefined ? '' : `, CPU ${f.cpuMsPerEvent} ms an event (server and database)`}`;
  const against = (what: string, mine: Ours | undefined, theirs: { deliveredPerS: number; endToEndMs: { p50: number } }) =>
    mine ? [line(`ours ${what} / svix`, `${ratio(mine.deliveredPerS, theirs.deliveredPerS)}x the rate, ${ratio(mine.endToEndMs.p50, theirs.endToEndMs.p50)}x the p50`)] : [];
  return [
    '(m) svix-server beside ours: the same driver, receiver and events as (k); PostgreSQL as the topology’s',
    ...Object.entries(m).flatMap(([queue, f]) => [
      line(`svix ${queue} queue, one at a time`, run(f.oneAtATime)),
      line(`svix ${queue} queue, 64 in flight`, run(f.inFlight64)),
      line(`svix ${queue} queue RSS MiB after`, f.rssAfterMiB),
      ...against(`embedded, one at a time (${queue})`, ours.embeddedOne, f.oneAtATime),
      ...against(`topology, one at a time (${queue})`, ours.topologyOne, f.oneAtATime),
      ...against(`embedded, 64 in flight (${queue})`, ours.embedded64, f.inFlight64),
      ...against(`topology, 64 in flight (${queue})`, ours.topology64, f.inFlight64),
    ]),
  ];
}
