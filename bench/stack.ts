import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { childrenOf, cpuSecondsOf, proportionalBytes, residentBytes } from '../src/system/procfs';
import { findOrBuildTemporalCli } from '../src/temporal/cli-binary';
import { generateEncryptionKey } from '../src/temporal/codec';
import { freePort, startDevServer, type DevServer } from '../src/temporal/dev-server';

const root = path.join(__dirname, '..', '..');

/** Peak resident set of a process (Linux VmHWM), in MiB. */
export function peakRssMiB(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/** How platform processes run, as `npm start` and the Dockerfile run them (package.json `config`): Node's flags and glibc's malloc arenas. */
const CONFIG = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { config: { nodeFlags: string; mallocArenaMax: string } }).config;
/** BENCH_PLATFORM_NODE_FLAGS adds flags of one's own (a profile: `--cpu-prof --cpu-prof-dir=/tmp/prof`). */
const NODE_FLAGS = [...CONFIG.nodeFlags.split(' '), ...(process.env.BENCH_PLATFORM_NODE_FLAGS?.split(' ').filter(Boolean) ?? [])];

/** `node dist/src/main.js [role]`: both roles (the embedded default) unless one is named. */
export function node(role: 'all' | 'api' | 'worker', env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, [...NODE_FLAGS, path.join(root, 'dist', 'src', 'main.js'), ...(role === 'all' ? [] : [role])], { env: { PATH: process.env.PATH, HOME: process.env.HOME, MALLOC_ARENA_MAX: CONFIG.mallocArenaMax, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

export async function waitHealthy(base: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await fetch(`${base}/healthz`).then((r) => r.ok, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the API never became healthy');
}

/** CPU seconds a process has used so far (procfs), none before it started. */
export const cpuSeconds = (pid: number | undefined): number | undefined => (pid ? cpuSecondsOf(pid) : undefined);

/** Its resident set now (VmRSS), in MiB. */
export const rssMiB = (pid: number | undefined): number | undefined => {
  const bytes = pid ? residentBytes(pid) : undefined;
  return bytes === undefined ? undefined : Math.round(bytes / 2 ** 20);
};

/** What a server and all its processes hold together (their PSS summed), in MiB. */
export const treePssMiB = (pid: number | undefined): number | undefined =>
  pid === undefined ? undefined : Math.round([pid, ...childrenOf(pid)].reduce((sum, one) => sum + (proportionalBytes(one) ?? 0), 0) / 2 ** 20);

export interface Stack {
  base: string;
  /** The Node process that runs the API (and, embedded, the worker and the isolates). */
  platformPid?: number;
  adminToken: string;
  dataDir: string;
  /** Peak RSS of each process of the stack, in MiB. */
  peakRss(): Record<string, number | undefined>;
  /** RSS of each process of the stack now, in MiB. */
  rss(): Record<string, number | undefined>;
  /** CPU seconds each process of the stack has used so far (a killed worker's are gone). */
  cpu(): Record<string, number | undefined>;
  /** The delivery log's files on disk, in MiB. */
  logSizeMiB(): number;
  killWorker?(): void;
  startWorker?(): void;
  stop(): Promise<void>;
}

/**
 * Until the stack's processes use less than `share` of a core over half a second (the tail
 * of the scenario before: epoch workflows completing, outcomes written), at most
 * `timeoutMs`; answers how long that took, ms. A scenario that times single calls (a cold
 * start) otherwise times that tail's contention.
 */
export async function settled(stack: Stack, share = 0.1, timeoutMs = 30_000): Promise<number> {
  const started = performance.now();
  const used = () => Object.values(stack.cpu()).reduce((sum: number, seconds) => sum + (seconds ?? 0), 0);
  for (let before = used(); performance.now() - started < timeoutMs; ) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = used();
    if (now - before < share * 0.5) break;
    before = now;
  }
  return Math.round(performance.now() - started);
}

/** When V8's memory reducer has run in an idle process (it had by 45 s, each time measured). */
const REDUCER_WAIT_MS = 60_000;

/**
 * Each process's RSS once it holds steady at idle: a fresh process holds its start-up's
 * young generation (64 MiB semi-spaces) until V8's memory reducer runs, some 30 s on.
 * Sampled every 5 s, from REDUCER_WAIT_MS on until three samples agree within 2 MiB, at
 * most `timeoutMs`.
 */
export async function steadyRss(stack: Pick<Stack, 'rss'>, timeoutMs = 150_000): Promise<Record<string, number | undefined>> {
  const total = (rss: Record<string, number | undefined>) => Object.values(rss).reduce((sum: number, mib) => sum + (mib ?? 0), 0);
  // Only samples from REDUCER_WAIT_MS on: a process holds steady at its start's size for a while first.
  const samples: Record<string, number | undefined>[] = [];
  for (const started = performance.now(); performance.now() - started < timeoutMs; ) {
    await new Promise((resolve) => setTimeout(resolve, 5000));
    if (performance.now() - started < REDUCER_WAIT_MS) continue;
    samples.push(stack.rss());
    const last = samples.slice(-3).map(total);
    if (last.length === 3 && Math.max(...last) - Math.min(...last) <= 2) return samples.at(-1)!;
  }
  process.stderr.write(`bench: RSS did not hold steady within ${timeoutMs / 1000} s; the last sample is printed\n`);
  return samples.at(-1) ?? stack.rss();
}

function logSize(dataDir: string): number {
  const files = ['delivery-log.db', 'delivery-log.db-wal', 'delivery-log.db-shm'].map((file) => path.join(dataDir, file));
  return Math.round((files.filter(existsSync).reduce((sum, file) => sum + statSync(file).size, 0) / 2 ** 20) * 10) / 10;
}

function baseEnv(dataDir: string, port: number, adminToken: string): NodeJS.ProcessEnv {
  return {
    PORT: String(port),
    PLATFORM_BASE_URL: `http://127.0.0.1:${port}`,
    PLATFORM_ADMIN_TOKEN: adminToken,
    PLATFORM_DATA_DIR: dataDir,
    PLATFORM_DATABASE_URL: `sqlite:${path.join(dataDir, 'delivery-log.db')}`,
    PLATFORM_ALLOW_PRIVATE_TARGETS: 'true',
    LOG_LEVEL: 'error',
    ...(process.env.PLATFORM_DELIVERY_SHARDS && { PLATFORM_DELIVERY_SHARDS: process.env.PLATFORM_DELIVERY_SHARDS }),
  };
}

/** `npm start`'s embedded default: one Node process (API and worker) and its dev server on SQLite. */
export async function startEmbedded(): Promise<Stack> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'platform-bench-'));
  const port = await freePort();
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  const main = node('all', { ...baseEnv(dataDir, port, adminToken), PLATFORM_TEMPORAL_PORT: String(await freePort()), PLATFORM_TEMPORAL_UI_PORT: String(await freePort()) });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(base);
  const devServer = childrenOf(main.pid!)[0];
  return {
    base,
    platformPid: main.pid,
    adminToken,
    dataDir,
    peakRss: () => ({ 'platform (API and worker)': peakRssMiB(main.pid), 'temporal dev server': peakRssMiB(devServer) }),
    rss: () => ({ 'platform (API and worker)': rssMiB(main.pid), 'temporal dev server': rssMiB(devServer) }),
    cpu: () => ({ 'platform (API and worker)': cpuSeconds(main.pid), 'temporal dev server': cpuSeconds(devServer) }),
    logSizeMiB: () => logSize(dataDir),
    stop: async () => {
      main.kill('SIGTERM');
      await new Promise((resolve) => main.once('exit', resolve));
    },
  };
}

/**
 * The production shape on one machine: a dev server, the API and the worker as processes of
 * their own; `settings` over the bench's (another PLATFORM_DATABASE_URL, say).
 */
export async function startSplit(settings: NodeJS.ProcessEnv = {}): Promise<Stack> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'platform-bench-'));
  const devServer: DevServer = await startDevServer({ cliPath: await findOrBuildTemporalCli(process.env), namespace: 'default', dbFile: path.join(dataDir, 'temporal.db') });
  const port = await freePort();
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  const env = { ...baseEnv(dataDir, port, adminToken), TEMPORAL_ADDRESS: devServer.address, PLATFORM_ENCRYPTION_KEY: generateEncryptionKey(), ...settings };
  let worker = node('worker', env);
  const workerPeaks: number[] = [];
  const api = node('api', env);
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(base);
  return {
    base,
    adminToken,
    dataDir,
    peakRss: () => ({ api: peakRssMiB(api.pid), worker: Math.max(...workerPeaks, peakRssMiB(worker.pid) ?? 0), 'temporal dev server': peakRssMiB(devServer.pid) }),
    rss: () => ({ api: rssMiB(api.pid), worker: rssMiB(worker.pid), 'temporal dev server': rssMiB(devServer.pid) }),
    cpu: () => ({ api: cpuSeconds(api.pid), worker: cpuSeconds(worker.pid), 'temporal dev server': cpuSeconds(devServer.pid) }),
    logSizeMiB: () => logSize(dataDir),
    killWorker: () => {
      workerPeaks.push(peakRssMiB(worker.pid) ?? 0);
      worker.kill('SIGKILL');
    },
    startWorker: () => (worker = node('worker', env)),
    stop: async () => {
      worker.kill('SIGTERM');
      api.kill('SIGTERM');
      await devServer.stop();
    },
  };
}
