import type { WorkflowBundleOption } from '@temporalio/worker';
import { startApi, type RunningApi } from '../api/app';
import type { ApiSettings } from '../api/deps';
import type { StartedParts } from '../lifecycle';
import { createWorker, type PlatformWorker } from '../worker';
import type { PlatformParts } from './parts';

/** What the worker role takes beyond the shared parts. */
export interface WorkerRole {
  /** PLATFORM_DELIVERY_RETENTION_DAYS */
  retentionDays: number;
  /** A bundle of the caller's (tests); otherwise the build's. */
  workflowBundle?: WorkflowBundleOption;
  attemptTimeoutMs?: number;
}

/**
 * The worker on the process's parts, added to `started`: a stop drains it (its attempts in
 * flight end or are recorded interrupted) before the parts under it close. `running` ends
 * when it has stopped, or rejects when it failed.
 */
export async function startWorkerRole(parts: PlatformParts, started: StartedParts, role: WorkerRole): Promise<{ worker: PlatformWorker; running: Promise<void> }> {
  const { settings } = parts;
  const worker = await createWorker({
    address: settings.address,
    namespace: settings.namespace,
    taskQueue: settings.taskQueue,
    codec: parts.codec,
    tracing: settings.tracing,
    workflowBundle: role.workflowBundle,
    client: parts.client,
    stores: parts.stores,
    ingest: parts.ingest,
    runtime: parts.runtime,
    baseUrl: settings.baseUrl,
    webhookGuard: settings.webhookGuard,
    retentionDays: role.retentionDays,
    attemptTimeoutMs: role.attemptTimeoutMs,
    logger: settings.logger,
  });
  const running = worker.run();
  // Its drain begins with the stop, not once the parts started after it (the API) have stopped.
  started.whenStopping(() => worker.shutdown());
  await started.add('the worker', worker, () => running);
  return { worker, running };
}

/** What the API role takes beyond the shared parts. */
export type ApiRole = Pick<ApiSettings, 'adminToken' | 'codecTrustsLoopback' | 'codecCorsOrigins' | 'liveness' | 'httpLimits'> & { port: number; host?: string };

/** The API on the process's parts, listening, added to `started` (closed first on a stop). */
export async function startApiRole(parts: PlatformParts, started: StartedParts, { port, host, ...role }: ApiRole): Promise<RunningApi> {
  const { settings } = parts;
  const api = await startApi(
    {
      ...role,
      client: parts.client,
      taskQueue: settings.taskQueue,
      baseUrl: settings.baseUrl,
      webhookGuard: settings.webhookGuard,
      encryptionKey: settings.encryptionKey,
      codec: parts.codec,
      stores: parts.stores,
      runtime: parts.runtime,
      ingest: parts.ingest,
      logger: settings.logger,
    },
    port,
    host,
  );
  return started.add('the API', api, (listening) => listening.close());
}
