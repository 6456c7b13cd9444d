import type { ShardLimits } from '../../src/ingest/shard-client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { EPOCH_MS, shardOf, shardWorkflowId } from '../../src/workflows/shard-contract';
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { PlatformWorker } from '../../src/worker';
import type { RunningApi } from '../../src/api/app';
import { createLogger, type Logger } from '../../src/logger';
import { buildTestParts, startTestWorker } from './worker';
import { namespaceFor } from './namespaces';
import { DELIVERY_SHARDS, testDatabaseUrl, testPlatformPorts } from './settings';
import { NowhereGuard } from './nowhere-guard';
import type { PlatformStores } from '../../src/platform/stores';
import type { PlatformParts } from '../../src/platform/parts';
import { startApiRole } from '../../src/platform/roles';
import { StartedParts } from '../../src/lifecycle';
import { egressGuard, webhookGuard } from '../../src/net/guards';
import type { IsolatePool } from '../../src/isolates/isolate-pool';
import type { IntegrationRuntime } from '../../src/isolates/integration-runtime';
import { freePort } from '../../src/temporal/dev-server';
import type { PlatformPorts } from '../../src/net/platform-ports';
import { installTemporalRuntime } from '../../src/temporal/runtime-logger';
import type { Tracing } from '../../src/tracing';
import type { HttpLimits } from '../../src/api/http-server';
import './stall-watch';

const testLogger = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');
installTemporalRuntime(testLogger);

export interface TestPlatformOptions {
  allowPrivateTargets?: boolean;
  /** A second platform of the same test file gets a task queue of its own. */
  taskQueue?: string;
  attemptTimeoutMs?: number;
  /** Skip the worker (to run it in another process). */
  worker?: boolean;
  /** Share another platform's administrator (two APIs of one deployment). */
  adminToken?: string;
  /** `host:port` pairs integration code may reach (PLATFORM_EGRESS_ALLOW). */
  egressAllow?: string[];
  /** The delivery shards' limits (hand-overs per run, backlog). */
  shardLimits?: ShardLimits;
  /** How long a receiver fails before its installation's new events are held (10 s unless set). */
  holdAfterMs?: number;
  /** The isolate pool's cap (PLATFORM_ISOLATE_MAX_PROCESSES). */
  maxIsolates?: number;
  /** `nowhere`: webhooks and integration code reach no destination at all (fuzzing). */
  outbound?: 'nowhere';
  /** The delivery log: a fresh SQLite file (default), a fresh PostgreSQL database, or another platform's (`databaseUrl`). */
  database?: 'sqlite' | 'postgres';
  databaseUrl?: string;
  /** Spans of the API, the client's calls, the workflows and the activities, to this process's provider. */
  tracing?: Tracing;
  /** Where the API and the worker log (pino at TEST_LOG_LEVEL, `warn` unless set). */
  logger?: Logger;
  /** The API's limits on slow clients and connections per address. */
  httpLimits?: HttpLimits;
  /** PLATFORM_BASE_URL says https, as behind a TLS proxy (the API itself still listens plain). */
  https?: true;
}

export interface HttpAnswer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface HttpOptions {
  token?: string;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
}

/** One request to an API at `base`: its status, its body (parsed when JSON) and headers. */
export async function httpAt<T = any>(base: string, method: string, path: string, options: HttpOptions = {}): Promise<HttpAnswer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(`${base}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: the test sees the text as it came.
  }
  return { status: response.status, body: parsed as T, headers: response.headers };
}

/** A real API on a real listener and a real worker, against the run's dev server. */
export class TestPlatform {
  readonly adminToken: string;
  client!: Client;
  api!: RunningApi;
  worker?: PlatformWorker;
  private workerRun?: Promise<void>;
  readonly namespace: string;
  readonly taskQueue: string;
  platformPorts!: PlatformPorts;
  stores!: PlatformStores;
  databaseUrl!: string;
  isolates!: IsolatePool;
  runtime!: IntegrationRuntime;
  /** What the platform's composition root built for this test platform. */
  parts!: PlatformParts;
  private readonly started = new StartedParts(testLogger);

  constructor(
    testFile: string,
    private readonly options: TestPlatformOptions = {},
  ) {
    this.namespace = namespaceFor(testFile);
    this.adminToken = options.adminToken ?? `adm_${randomBytes(16).toString('hex')}`;
    // A namespace and a task queue of its own per test file: nothing meets another file's workers.
    this.taskQueue = options.taskQueue ?? this.namespace;
  }

  async start(): Promise<this> {
    const logger = this.options.logger ?? testLogger;
    this.platformPorts = testPlatformPorts();
    this.databaseUrl = this.options.databaseUrl ?? (await testDatabaseUrl(this.options.database ?? 'sqlite', this.namespace));
    const nowhere = this.options.outbound === 'nowhere' ? new NowhereGuard() : undefined;
    // The API's port is chosen first: the isolates' API binding and public endpoints are built from it.
    const port = await freePort();
    const parts = await buildTestParts(
      {
        namespace: this.namespace,
        taskQueue: this.taskQueue,
        databaseUrl: this.databaseUrl,
        baseUrl: `${this.options.https ? 'https' : 'http'}://127.0.0.1:${port}`,
        platformPorts: this.platformPorts,
        logger,
        webhookGuard: nowhere ?? webhookGuard(this.options.allowPrivateTargets ?? true, this.platformPorts),
        egressGuard: nowhere ?? egressGuard(this.options.egressAllow ?? [], this.platformPorts),
        maxIsolates: this.options.maxIsolates,
        shardLimits: this.options.shardLimits,
        holdAfterMs: this.options.holdAfterMs,
        tracing: this.options.tracing,
      },
      this.started,
    );
    this.parts = parts;
    ({ client: this.client, stores: this.stores, isolates: this.isolates, runtime: this.runtime } = parts);
    if (this.options.worker !== false) ({ worker: this.worker, running: this.workerRun } = await startTestWorker(parts, this.started, this.options.attemptTimeoutMs));
    this.api = await startApiRole(parts, this.started, {
      adminToken: this.adminToken,
      codecTrustsLoopback: true,
      codecCorsOrigins: [],
      httpLimits: this.options.httpLimits,
      port,
      host: '127.0.0.1',
    });
    this.platformPorts.add(Number(new URL(this.api.url).port));
    return this;
  }

  /** Stops what start built, last first; a worker that failed fails the stop. */
  async stop(): Promise<void> {
    await this.started.stopAll();
    await this.workerRun;
  }

  http<T = any>(method: string, path: string, options: HttpOptions = {}): Promise<HttpAnswer<T>> {
    return httpAt<T>(this.api.url, method, path, options);
  }

  admin<T = any>(method: string, path: string, body?: unknown): Promise<HttpAnswer<T>> {
    return this.http<T>(method, path, { token: this.adminToken, body });
  }

  /**
   * POSTs an event as a client does: with an eventId given before its first try (a 503 may
   * come after the event was recorded: sent again, it is answered as the first), and again
   * after a 503 (the engine did not answer in time, a shard full), after its Retry-After,
   * for up to `timeoutMs`; any other answer is the answer. For tests whose subject is not
   * ingest's refusals, nor when events reach their shard.
   */
  async ingest<T = any>(event: object, timeoutMs = 20_000): Promise<HttpAnswer<T>> {
    const body = 'eventId' in event ? event : { ...event, eventId: `evt_${randomBytes(12).toString('hex')}` };
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const answer = await this.admin<T>('POST', '/v1/events', body);
      if (answer.status !== 503 || Date.now() > deadline) return answer;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 1000 * (Number(answer.headers.get('retry-after')) || 1))));
    }
  }

  /** A fresh organization with one member; ids are unique per call. */
  async tenant(): Promise<{ org: string; token: string; userId: string }> {
    const suffix = randomBytes(4).toString('hex');
    const org = `org-${suffix}`;
    const created = await this.admin('POST', '/v1/orgs', { id: org, subdomain: org, title: `Org ${suffix}` });
    if (created.status !== 201) throw new Error(`create org: ${created.status} ${JSON.stringify(created.body)}`);
    const user = await this.admin('POST', '/v1/users', { id: `user-${suffix}`, orgs: [org] });
    if (user.status !== 201) throw new Error(`create user: ${user.status} ${JSON.stringify(user.body)}`);
    return { org, token: user.body.token, userId: user.body.id };
  }

  /** An active webhook installation pointing at `url`. */
  async webhook(token: string, target: { org: string; space?: string; site?: string }, url: string, events: Record<string, boolean | number | string>) {
    const answer = await this.http('POST', '/v1/integrations/webhook/installations', { token, body: { target, configuration: { webhook_url: url, ...events } } });
    if (answer.status !== 201) throw new Error(`install: ${answer.status} ${JSON.stringify(answer.body)}`);
    const secret = await this.http('GET', `/v1/installations/${answer.body.id}/signing-secret`, { token });
    return { id: answer.body.id as string, secret: secret.body.secret as string, installation: answer.body };
  }

  /**
   * Until every shard workflow that deliveries of `eventId` could have been handed to since
   * `since` (ms since 1970) has closed, or never started: what a hand-over to them would have
   * sent (a duplicate, say) has been sent by then. The proof of a negative that does not sleep.
   */
  async untilShardsSettled(eventId: string, since: number, timeoutMs = 30_000): Promise<void> {
    const epochMs = this.options.shardLimits?.epochMs ?? EPOCH_MS;
    const shard = shardOf(eventId, DELIVERY_SHARDS);
    for (let epoch = Math.floor(since / epochMs); epoch <= Math.floor(Date.now() / epochMs); epoch++) {
      const handle = this.client.workflow.getHandle(shardWorkflowId(shard, epoch));
      await waitFor(
        () => handle.describe().then(
          (run) => (run.status.name === 'RUNNING' ? undefined : true),
          (err: unknown) => (err instanceof WorkflowNotFoundError ? true : Promise.reject(err)),
        ),
        timeoutMs,
        `shard workflow ${shardWorkflowId(shard, epoch)} to close`,
      );
    }
  }

  /** Polls a delivery until it reaches a final state. */
  async finalDelivery(id: string, token: string, timeoutMs = 45_000): Promise<any> {
    return (await this.finalDeliveries([id], token, timeoutMs))[0];
  }

  /**
   * Each delivery once final, polled one request at a time, not one poller each: in stop
   * 37's CI run a hundred pollers at 10/s shared the event loop of the test process, and the
   * receiver in it saw a SIGTERM case's retries 27 s late, after their timeouts.
   */
  async finalDeliveries(ids: string[], token: string, timeoutMs = 45_000): Promise<any[]> {
    const finals = new Map<string, any>();
    await waitFor(async () => {
      for (const id of ids) {
        if (finals.has(id)) continue;
        const answer = await this.http('GET', `/v1/deliveries/${encodeURIComponent(id)}`, { token });
        if (answer.status !== 200 || answer.body.status === 'pending') return undefined;
        finals.set(id, answer.body);
      }
      return true;
    }, timeoutMs, ids.length === 1 ? `delivery ${ids[0]} to finish` : `${ids.length} deliveries to finish`);
    return ids.map((id) => finals.get(id));
  }

  /** A background operation once it has ended (done or cancelled). */
  async operationDone(id: string, token: string, timeoutMs = 60_000): Promise<any> {
    return waitFor(async () => {
      const answer = await this.http('GET', `/v1/operations/${encodeURIComponent(id)}`, { token });
      return answer.status === 200 && answer.body.status !== 'running' ? answer.body : undefined;
    }, timeoutMs, `operation ${id} to end`);
  }
}

export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export function spaceEvent(org: string, spaceId: string, extra: Record<string, unknown> = {}) {
  return { type: 'space_content_updated', organizationId: org, spaceId, revisionId: `rev-${randomBytes(3).toString('hex')}`, ...extra };
}

export function siteViewEvent(org: string, siteId: string, extra: Record<string, unknown> = {}) {
  return {
    type: 'site_view',
    organizationId: org,
    siteId,
    visitor: { anonymousId: 'anon-1', userAgent: 'test', ip: '203.0.113.9', cookies: {} },
    url: 'https://docs.example.com/page',
    referrer: 'https://example.com/',
    ...extra,
  };
}
