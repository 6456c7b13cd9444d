import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../src/temporal/dev-server';
import { findOrBuildTemporalServer, TemporalServer } from '../../src/temporal/temporal-server';
import { ended, entryPoint } from './entry-point';
import { waitFor } from './platform';
import { createTestDatabase } from './postgres';
import { testSettings } from './settings';

/** One process of the deployment: an API (with its URL) or a worker. */
export class Member {
  child?: ChildProcess;
  /** What it logged that the topology listens for. */
  readonly lines: string[] = [];
  /** Its last lines, said when it or a test fails. */
  readonly tail: string[] = [];
  /** Why it exited each time a start failed (the orchestrator started it again). */
  readonly restarts: string[] = [];
  /** Every line it logged, for reading a failure whole: TOPOLOGY_LOGS names a directory. */
  private readonly log?: WriteStream;

  constructor(
    readonly role: 'api' | 'worker',
    readonly name: string,
    private readonly env: NodeJS.ProcessEnv,
    readonly url?: string,
  ) {
    const dir = process.env.TOPOLOGY_LOGS;
    if (!dir) return;
    mkdirSync(dir, { recursive: true });
    this.log = createWriteStream(join(dir, `${name.replace(/\W+/g, '-')}.log`), { flags: 'a' });
  }

  /**
   * Spawns it, as an orchestrator with a restart policy does (compose's `unless-stopped`): one
   * that exits while starting (its start failed: it exits 1 for that) is started again, at
   * most 5 times, each such exit kept in `restarts` with its last lines. An API is awaited
   * until `/readyz`, a worker until it logs that it runs.
   */
  async start(): Promise<void> {
    for (let tries = 1; ; tries++) {
      const exited = await this.startOnce();
      if (!exited) return;
      this.restarts.push(exited);
      if (tries >= 5) throw new Error(`${this.name} exited at each of 5 starts; the last:\n${exited}`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  /** Answers why it exited, if it did before it was ready. */
  private async startOnce(): Promise<string | undefined> {
    this.tail.length = 0;
    let running = false;
    const child = entryPoint(this.role, this.env, (line) => {
      if (/schema migrated|worker running/.test(line)) this.lines.push(line);
      this.log?.write(`${line}\n`);
      if (line.includes('worker running')) running = true;
      // The SDK's task tokens (hundreds of characters) would push the error out of the kept length.
      this.tail.push(line.replace(/"taskToken":"[^"]*",?/, '').slice(0, 1500));
      if (this.tail.length > 8) this.tail.shift();
    });
    this.child = child;
    const exit = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(`${this.name} exited (${code ?? signal}) while starting:\n${this.tail.join('\n')}`)));
    const gone = () => child.exitCode !== null || child.signalCode !== null;
    const url = this.url;
    /** What /readyz last said when it was not ready, for a start that never gets there. */
    let unready = 'nothing';
    const isReady = url
      ? () =>
          fetch(`${url}/readyz`).then(
            async (r) => (r.ok || (unready = `${r.status} ${(await r.text()).slice(0, 500)}`), r.ok),
            (err: Error) => ((unready = err.message), false),
          )
      : async () => running;
    // Ends once ready or gone: the exit then says why; a start that hangs says where it stands.
    await waitFor(async () => (gone() || (await isReady()) ? true : undefined), 120_000, `${this.name} to be ready`, 100).catch((err: Error) => {
      throw new Error(`${err.message}; ${url ? `its /readyz last answered ${unready}; ` : ''}its last lines:\n${this.tail.join('\n')}`);
    });
    return gone() ? exit : undefined;
  }

  /** SIGTERM: the orchestrator's stop (a drain). */
  stop(): Promise<void> {
    return ended(this.child, 'SIGTERM');
  }

  /** SIGKILL: a crash. */
  kill(): Promise<void> {
    return ended(this.child, 'SIGKILL');
  }
}

/**
 * What every topology shares, the test's and the bench's: a Temporal server from
 * deploy/temporal on its own databases of `postgresUrl` (its services apart if `apart`),
 * the delivery log's database beside them, two API ports, and the environment of the
 * platform's processes (each API adds its PORT and PLATFORM_BASE_URL).
 */
export async function topologyBase(options: { postgresUrl: string; cliPath: string; suffix: string; adminToken: string; encryptionKey: string; logLevel: string; apart?: boolean }) {
  // Built once per machine (several minutes the first time): only the topology needs it.
  const binDir = await findOrBuildTemporalServer(process.env);
  const { hostname, port, username } = new URL(options.postgresUrl);
  const server = new TemporalServer({
    binDir,
    cliPath: options.cliPath,
    postgres: { host: hostname, port: Number(port), user: username },
    databases: { temporal: `temporal_${options.suffix}`, visibility: `temporal_visibility_${options.suffix}` },
    namespaces: ['default'],
    apart: options.apart,
  });
  await server.setUp();
  const databaseUrl = await createTestDatabase(options.postgresUrl, `log_${options.suffix}`).catch(async (err: unknown) => {
    await server.stop();
    throw err;
  });
  const apiPorts = [await freePort(), await freePort()];
  const shared = {
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: 'default',
    PLATFORM_ENCRYPTION_KEY: options.encryptionKey,
    PLATFORM_ADMIN_TOKEN: options.adminToken,
    PLATFORM_DATABASE_URL: databaseUrl,
    PLATFORM_ALLOW_PRIVATE_TARGETS: 'true',
    PLATFORM_BASE_URL: `http://127.0.0.1:${apiPorts[0]}`,
    LOG_LEVEL: options.logLevel,
  };
  return { server, databaseUrl, apiPorts, shared };
}

/**
 * The production shape on one machine, as docker-compose.yml runs it: a Temporal server
 * (deploy/temporal) with its databases on the run's PostgreSQL, the delivery log on the
 * same PostgreSQL, two API processes and two worker processes (`node dist/src/main.js api|worker`).
 */
export class Topology {
  readonly apis: Member[] = [];
  readonly workers: Member[] = [];
  server!: TemporalServer;
  databaseUrl = '';
  adminToken = `adm_${randomBytes(16).toString('hex')}`;

  /** Temporal's schema and server, then all four processes started at once on a fresh log. */
  async start(label: string): Promise<this> {
    const postgresUrl = process.env.TEST_POSTGRES_URL;
    const cliPath = process.env.TEMPORAL_CLI_RESOLVED;
    if (!postgresUrl || !cliPath) throw new Error(`the topology needs the fixture's PostgreSQL and Temporal CLI: ${process.env.TEST_POSTGRES_UNAVAILABLE ?? 'the fixture did not run'}`);
    const suffix = `${label}_${randomBytes(3).toString('hex')}`;
    const { server, databaseUrl, apiPorts, shared } = await topologyBase({ postgresUrl, cliPath, suffix, adminToken: this.adminToken, encryptionKey: testSettings().encryptionKey, logLevel: 'info' });
    [this.server, this.databaseUrl] = [server, databaseUrl];
    for (const [i, port] of apiPorts.entries()) {
      this.apis.push(new Member('api', `api ${i + 1}`, { ...shared, PORT: String(port), PLATFORM_BASE_URL: `http://127.0.0.1:${port}` }, `http://127.0.0.1:${port}`));
    }
    for (const i of [1, 2]) this.workers.push(new Member('worker', `worker ${i}`, { ...shared, PLATFORM_WORKER_METRICS_PORT: String(await freePort()) }));
    await Promise.all(this.members().map((member) => member.start()));
    return this;
  }

  members(): Member[] {
    return [...this.apis, ...this.workers];
  }

  /** What each part said last, and the server's exits: for a failed test's message. */
  lastWords(): string {
    const server = [`Temporal server: ${this.server.exits.join(', ') || 'no exit'}`, ...this.server.said];
    return [...server, ...this.members().flatMap((member) => [`${member.name} (${member.restarts.length} failed starts):`, ...member.restarts, ...member.tail])].join('\n');
  }

  /** Starts that failed (the process exited while starting, and was started again), by process. */
  failedStarts(): string {
    return this.members().map((member) => `${member.name} ${member.restarts.length}`).join(', ');
  }

  async stop(): Promise<void> {
    await Promise.all(this.members().map((member) => member.kill()));
    await this.server?.stop();
  }
}
