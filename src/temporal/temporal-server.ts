import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { tiedToParent } from '../lifecycle';
import { freePort, stopChild, waitUntilServing } from './dev-server';
import { cachedOrBuilt, type GoTool } from './go-tools';

/** The server and its schema tool, one release (newer tags ask for a newer Go than the machines have). */
export const TEMPORAL_SERVER: GoTool = {
  label: 'the Temporal server',
  cacheName: 'temporal-server-v1.32.0',
  modules: ['go.temporal.io/server/cmd/server@v1.32.0', 'go.temporal.io/server/cmd/tools/sql@v1.32.0'],
  binaries: ['server', 'sql'],
};

/** deploy/temporal: the configuration and scripts docker-compose.yml runs the server with. */
export const DEPLOY_TEMPORAL = path.join(__dirname, '..', '..', '..', 'deploy', 'temporal');

/** The server's folder (`server`, `sql`) in the tool cache, built the first time. */
export function findOrBuildTemporalServer(env: NodeJS.ProcessEnv, say: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Promise<string> {
  return cachedOrBuilt(TEMPORAL_SERVER, env, say);
}

export interface TemporalServerOptions {
  /** findOrBuildTemporalServer's folder. */
  binDir: string;
  cliPath: string;
  postgres: { host: string; port: number; user: string; password?: string };
  /** Its two databases, created when missing. */
  databases: { temporal: string; visibility: string };
  namespaces: readonly string[];
  /** Each service in a process of its own (the bench's CPU by service); otherwise one process, as compose runs it. */
  apart?: boolean;
  onLog?: (line: string) => void;
}

const SERVICE_NAMES = ['frontend', 'history', 'matching', 'worker'] as const;
const SERVICES = SERVICE_NAMES.map((service) => service.toUpperCase());

/**
 * A Temporal server as docker-compose.yml runs it (deploy/temporal's config.yaml, its
 * schema and namespace scripts, on PostgreSQL), on free loopback ports kept across restarts.
 */
export class TemporalServer {
  address = '';
  /** Its processes' exits, stopped or not, and its last lines: what a test says when it fails. */
  readonly exits: string[] = [];
  readonly said: string[] = [];
  private children = new Map<string, ChildProcess>();
  private env: NodeJS.ProcessEnv = {};

  constructor(private readonly options: TemporalServerOptions) {}

  /** Schema, server, namespaces: the first start of a cluster. */
  async setUp(): Promise<this> {
    const { postgres, databases } = this.options;
    const ports: Record<string, string> = { FRONTEND_HTTP_PORT: String(await freePort()) };
    for (const service of SERVICES) {
      ports[`${service}_GRPC_PORT`] = String(await freePort());
      ports[`${service}_MEMBERSHIP_PORT`] = String(await freePort());
    }
    this.address = `127.0.0.1:${ports.FRONTEND_GRPC_PORT}`;
    this.env = {
      PATH: process.env.PATH,
      POSTGRES_SEEDS: postgres.host,
      DB_PORT: String(postgres.port),
      POSTGRES_USER: postgres.user,
      POSTGRES_PWD: postgres.password ?? '',
      DBNAME: databases.temporal,
      VISIBILITY_DBNAME: databases.visibility,
      DYNAMIC_CONFIG_FILE_PATH: path.join(DEPLOY_TEMPORAL, 'dynamicconfig.yaml'),
      ...ports,
    };
    await this.script('setup-schema.sh', { TEMPORAL_SQL_TOOL: path.join(this.options.binDir, 'sql') });
    await this.start();
    for (const namespace of this.options.namespaces) {
      await this.script('create-namespace.sh', { TEMPORAL_CLI: this.options.cliPath, TEMPORAL_ADDRESS: this.address, TEMPORAL_NAMESPACE: namespace });
      await this.waitForNamespace(namespace);
    }
    return this;
  }

  /** Starts the server on the cluster's ports; answers once its frontend serves. */
  async start(): Promise<void> {
    const said = this.said;
    const spawnOne = (services: readonly string[]) => {
      const args = ['--config-file', path.join(DEPLOY_TEMPORAL, 'config.yaml'), '--allow-no-auth', 'start', ...services.flatMap((service) => ['--service', service])];
      const child = spawn(...tiedToParent(path.join(this.options.binDir, 'server'), args), { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
      const lines = (chunk: Buffer) =>
        chunk.toString().split('\n').filter(Boolean).forEach((line) => {
          said.push(line.slice(0, 400));
          if (said.length > 8) said.shift();
          this.options.onLog?.(line);
        });
      child.stdout!.on('data', lines);
      child.stderr!.on('data', lines);
      child.once('exit', (code, signal) => this.exits.push(`${services.join(',') || 'server'} exited (${code ?? signal})`));
      return child;
    };
    this.children = this.options.apart ? new Map(SERVICE_NAMES.map((service) => [service, spawnOne([service])])) : new Map([['server', spawnOne([])]]);
    const front = this.children.get('frontend') ?? this.children.get('server')!;
    await waitUntilServing('the Temporal server', this.address, front, () => said.join(' | '), 120_000).catch(async (err: unknown) => {
      await this.stop();
      throw err;
    });
  }

  /** Its processes' ids: `server`, or one per service when they run apart. */
  pids(): Record<string, number | undefined> {
    return Object.fromEntries([...this.children].map(([name, child]) => [name, child.pid]));
  }

  /** SIGTERM (SIGKILL after 10 s): the server's own graceful stop. */
  async stop(): Promise<void> {
    await Promise.all([...this.children.values()].map((child) => stopChild(child)));
  }

  /**
   * A namespace just registered is unknown to the frontend until its namespace cache
   * refreshes (up to 10 s): its workers would fail to start.
   */
  private async waitForNamespace(namespace: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await promisify(execFile)(this.options.cliPath, ['workflow', 'list', '--address', this.address, '--namespace', namespace, '--limit', '1']);
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`namespace ${namespace} not served 60 s after it was created: ${(err as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  private async script(name: string, env: NodeJS.ProcessEnv): Promise<void> {
    // The CLI in them reads its client configuration under the user's home: they get ours.
    await promisify(execFile)(path.join(DEPLOY_TEMPORAL, name), [], { env: { ...process.env, ...this.env, ...env }, timeout: 180_000 }).catch((err: Error & { stderr?: string }) => {
      throw new Error(`deploy/temporal/${name} failed: ${err.message}\n${err.stderr ?? ''}`);
    });
  }
}
