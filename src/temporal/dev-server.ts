import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { parse } from 'yaml';
import { tiedToParent } from '../lifecycle';
import { listenOn } from '../net/listen';

export interface DevServerOptions {
  cliPath: string;
  namespace: string;
  /** Further namespaces created at launch. */
  extraNamespaces?: string[];
  /** SQLite file; omitted: in memory (tests). */
  dbFile?: string;
  /** Omitted: headless. */
  ui?: { port: number; codecEndpoint?: string };
  port?: number;
  ip?: string;
  onLog?: (line: string) => void;
}

export interface DevServer {
  address: string;
  pid?: number;
  uiUrl?: string;
  /** Settles when the server's process has exited, by a stop or not. */
  exited: Promise<void>;
  stop(): Promise<void>;
}

/** The dev server's process exited before it served: a start that may well succeed when tried again. */
export class DevServerExitedError extends Error {}

/** Listens on `ip:port` (0: any free port) and closes again; answers the port it had, or why not naming `setting`. */
async function bindOnce(ip: string, port: number, setting: string): Promise<number> {
  const server = net.createServer();
  await listenOn(server, port, ip, setting);
  const { port: bound } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return bound;
}

/**
 * A free loopback port below the kernel's ephemeral range (32768 and up on Linux), where
 * outgoing connections never take one: a port the system handed out as free could be the
 * local end of a connection by the time its listener starts (a busy test run saw it), and a
 * Temporal cluster keeps its members' ports as a PostgreSQL smallint (at most 32767).
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 1000; tries++) {
    const port = 10_000 + Math.floor(Math.random() * 22_768);
    // One handed out already may not listen yet: never the same twice from this process.
    if (issued.has(port)) continue;
    if (await bindOnce('127.0.0.1', port, 'a free port').then(() => true, () => false)) {
      issued.add(port);
      return port;
    }
  }
  throw new Error('no free port between 10000 and 32767 on 127.0.0.1');
}
const issued = new Set<number>();

/** deploy/temporal/dynamicconfig.yaml: what docker-compose's server gets, the dev server gets too. */
const DYNAMIC_CONFIG_FILE = path.join(__dirname, '..', '..', '..', 'deploy', 'temporal', 'dynamicconfig.yaml');

/** `--dynamic-config-value key=value` for each setting of the file (one unconstrained value each). */
function dynamicConfigArgs(): string[] {
  const settings = parse(readFileSync(DYNAMIC_CONFIG_FILE, 'utf8')) as Record<string, { value: unknown }[]>;
  return Object.entries(settings).flatMap(([key, [setting]]) => ['--dynamic-config-value', `${key}=${JSON.stringify(setting!.value)}`]);
}

/**
 * `temporal server start-dev`. WAL with
 * synchronous=NORMAL keeps every committed transaction through a process crash (only a
 * power loss can cost the last ones) and spares an fsync per commit.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const ip = options.ip ?? '127.0.0.1';
  const port = options.port ?? (await freePort());
  // A port another process listens on (a Temporal server of its own on 7233, say) is
  // refused: the readiness check would take that server for this one, and the platform
  // would run on it while its own exits. The CLI checks too, but only once started.
  await bindOnce(ip, port, 'PLATFORM_TEMPORAL_PORT');
  if (options.ui) await bindOnce(ip, options.ui.port, 'PLATFORM_TEMPORAL_UI_PORT');
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port), '--namespace', options.namespace, '--log-level', 'warn'];
  for (const namespace of options.extraNamespaces ?? []) args.push('--namespace', namespace);
  args.push(...dynamicConfigArgs());
  if (options.dbFile) {
    args.push('--db-filename', options.dbFile, '--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal');
  }
  if (options.ui) {
    args.push('--ui-port', String(options.ui.port));
    if (options.ui.codecEndpoint) args.push('--ui-codec-endpoint', options.ui.codecEndpoint);
  } else {
    args.push('--headless');
  }
  // Tied to this process: a crash of the platform leaves no dev server holding its ports.
  const child = spawn(...tiedToParent(options.cliPath, args), { stdio: ['ignore', 'pipe', 'pipe'] });
  // Why it stopped, if it stops before serving: its first panic or error line (a Go panic
  // ends with a stack that says nothing), and the last lines it wrote.
  const said: string[] = [];
  let firstError: string | undefined;
  const lines = (chunk: Buffer) =>
    chunk.toString().split('\n').filter(Boolean).forEach((line) => {
      if (!firstError && /^(panic|fatal|error)\b/i.test(line.trim())) firstError = line.trim();
      said.push(line);
      if (said.length > 5) said.shift();
      options.onLog?.(line);
    });
  child.stdout!.on('data', lines);
  child.stderr!.on('data', lines);
  const address = `${ip}:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // One that did not serve in time is stopped: it must not come up later beside its retry.
  await waitUntilServing('temporal server start-dev', address, child, () => [firstError, ...said.filter((line) => line.trim() !== firstError)].filter(Boolean).join(' | ')).catch(async (err: unknown) => {
    await stopChild(child);
    throw err;
  });
  return {
    address,
    pid: child.pid,
    exited,
    uiUrl: options.ui ? `http://${ip === '0.0.0.0' ? 'localhost' : ip}:${options.ui.port}` : undefined,
    stop: () => stopChild(child),
  };
}

/** Until `address` answers GetSystemInfo while `child` (called `label`) still runs. */
export async function waitUntilServing(label: string, address: string, child: ChildProcess, said: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  const stopped = () => new DevServerExitedError(`${label} exited with code ${exited} before serving${said() ? `: ${said()}` : ''}`);
  for (;;) {
    if (exited !== undefined) throw stopped();
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.getSystemInfo({});
        // Whoever answered, it is not this server if this one has stopped meanwhile.
        if (exited !== undefined) throw stopped();
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${label} at ${address} not serving after ${timeoutMs} ms: ${err}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** SIGTERM, and SIGKILL after 10 s. */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
