import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../../src/temporal/dev-server';
import { httpAt, waitFor, type HttpAnswer, type HttpOptions, type TestPlatform } from './platform';
import { DELIVERY_SHARDS, testSettings } from './settings';

/**
 * Another API process of a test platform's deployment (`node dist/src/main.js api`, as
 * docker-compose runs it): its own process, client and connection to the log; the same
 * namespace, task queue, log, key and administrator.
 */
export class ApiProcess {
  url = '';
  private child?: ChildProcess;

  /** `env` replaces what it names (another key, say). */
  constructor(
    private readonly platform: TestPlatform,
    private readonly env: NodeJS.ProcessEnv = {},
  ) {}

  async start(): Promise<this> {
    const { address, encryptionKey } = testSettings();
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}`;
    this.child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'src', 'main.js'), 'api'], {
      env: {
        PATH: process.env.PATH,
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: this.platform.namespace,
        PLATFORM_TASK_QUEUE: this.platform.taskQueue,
        PLATFORM_DELIVERY_SHARDS: String(DELIVERY_SHARDS),
        PORT: String(port),
        PLATFORM_BASE_URL: this.url,
        PLATFORM_ADMIN_TOKEN: this.platform.adminToken,
        PLATFORM_ENCRYPTION_KEY: encryptionKey,
        PLATFORM_DATABASE_URL: this.platform.databaseUrl,
        PLATFORM_ALLOW_PRIVATE_TARGETS: 'true',
        LOG_LEVEL: 'silent',
        ...this.env,
      },
      stdio: 'ignore',
    });
    await waitFor(async () => ((await fetch(`${this.url}/healthz`).then((r) => r.status, () => 0)) === 200 ? true : undefined), 60_000, 'the second API process', 200);
    return this;
  }

  http<T = any>(method: string, path: string, options: HttpOptions = {}): Promise<HttpAnswer<T>> {
    return httpAt<T>(this.url, method, path, options);
  }

  admin<T = any>(method: string, path: string, body?: unknown): Promise<HttpAnswer<T>> {
    return this.http<T>(method, path, { token: this.platform.adminToken, body });
  }

  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child!.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}
