import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../src/temporal/dev-server';

export interface TestPostgres {
  url: string;
  /** The server's (postmaster's) process. */
  pid?: number;
  stop(): Promise<void>;
}

/** Debian's server binaries (postgresql-NN), newest first, else whatever PATH has. */
function binDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  for (const version of versions) if (existsSync(path.join(root, version, 'bin', 'initdb'))) return path.join(root, version, 'bin');
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) if (dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'postgres'))) return dir;
  return undefined;
}

/** initdb refuses root: as root, run the server's programs as the `postgres` user. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [command, args];
  return ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', command, ...args]];
}

/**
 * A throwaway PostgreSQL cluster for the run: its own directory, a free loopback port,
 * trust authentication, durability off (the data dies with the run).
 */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  if (!bin) throw new Error('PostgreSQL server binaries not found (install Debian\'s "postgresql")');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-pg-'));
  if (process.getuid?.() === 0) {
    const { uid, gid } = await promisify(execFile)('id', ['-u', 'postgres']).then(async ({ stdout }) => ({ uid: Number(stdout), gid: Number((await promisify(execFile)('id', ['-g', 'postgres'])).stdout) }));
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  const data = path.join(dir, 'data');
  const [initdb, initArgs] = asServerUser(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  await promisify(execFile)(initdb, initArgs);
  const port = await freePort();
  const [postgres, args] = asServerUser(path.join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200']);
  const server: ChildProcess = spawn(postgres, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      break;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (server.exitCode !== null || Date.now() > deadline) throw new Error(`PostgreSQL did not start: ${(err as Error).message}\n${log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    url,
    pid: server.pid,
    stop: async () => {
      if (server.exitCode === null) {
        await new Promise<void>((resolve) => {
          server.once('exit', () => resolve());
          server.kill('SIGINT'); // fast shutdown
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh database on the run's cluster, so test files never see each other's rows. */
export async function createTestDatabase(serverUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  return serverUrl.replace(/\/[^/]*$/, `/${name}`);
}
