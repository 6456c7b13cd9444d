import type { ShardLimits } from '../../src/ingest/shard-client';
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { PlatformStores } from '../../src/platform/stores';
import type { IntegrationRuntime } from '../../src/isolates/integration-runtime';
import type { Logger } from '../../src/logger';
import { webhookGuard } from '../../src/net/guards';
import type { PlatformPorts } from '../../src/net/platform-ports';
import type { DestinationGuard } from '../../src/net/destination-guard';
import { createWorker, type PlatformWorker } from '../../src/worker';
import { DELIVERY_SHARDS, testSettings } from './settings';
import type { Tracing } from '../../src/tracing';
import { tracingBundle } from './tracing-bundle';

export interface TestWorkerOptions {
  namespace: string;
  taskQueue: string;
  client: Client;
  stores: PlatformStores;
  runtime: IntegrationRuntime;
  baseUrl: string;
  platformPorts: PlatformPorts;
  logger: Logger;
  /** Where webhooks may go: private targets allowed unless a guard is given. */
  webhookGuard?: DestinationGuard;
  attemptTimeoutMs?: number;
  /** Workflow and activity spans too, with a bundle that carries the workflow interceptors. */
  tracing?: Tracing;
  shardLimits?: ShardLimits;
}

/** The one way tests build a worker: the run's dev server and workflow bundle, the test platform's shards. */
export async function createTestWorker(options: TestWorkerOptions): Promise<PlatformWorker> {
  const { address, bundle, encryptionKey } = testSettings();
  return createWorker({
    tracing: options.tracing,
    address,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    encryptionKey,
    workflowBundle: { code: options.tracing ? await tracingBundle() : readFileSync(bundle, 'utf8') },
    client: options.client,
    stores: options.stores,
    runtime: options.runtime,
    baseUrl: options.baseUrl,
    deliveryShards: DELIVERY_SHARDS,
    shardLimits: options.shardLimits,
    webhookGuard: options.webhookGuard ?? webhookGuard(true, options.platformPorts),
    retentionDays: 30,
    logger: options.logger,
    attemptTimeoutMs: options.attemptTimeoutMs,
  });
}
