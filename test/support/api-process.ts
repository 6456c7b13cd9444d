import type { ChildProcess } from 'node:child_process';
import { freePort } from '../../src/temporal/dev-server';
import { ended, entryPoint, waitForOk } from './entry-point';
import { httpAt, type HttpAnswer, type HttpOptions, type TestPlatform } from './platform';
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
    this.child = entryPoint('api', {
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
    });
    await waitForOk(this.url, '/healthz', 'the second API process');
    return this;
  }

  http<T = any>(method: string, path: string, options: HttpOptions = {}): Promise<HttpAnswer<T>> {
    return httpAt<T>(this.url, method, path, options);
  }

  admin<T = any>(method: string, path: string, body?: unknown): Promise<HttpAnswer<T>> {
    return this.http<T>(method, path, { token: this.platform.adminToken, body });
  }

  stop(): Promise<void> {
    return ended(this.child, 'SIGTERM');
  }
}
