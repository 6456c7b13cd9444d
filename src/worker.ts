import { NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import { createActivities, type ActivityDependencies } from './activities';
import { configFromEnv, requireSetting } from './config';
import { openDeliveryLog } from './delivery-log';
import { createLogger } from './logger';
import { assertEgressAllowList, egressGuard, platformPortsOf, webhookGuard } from './net/guards';
import type { Client } from '@temporalio/client';
import { connectClient, dataConverter } from './temporal/client';
import type { DeliveryLogStores } from './delivery-log';
import { ShardClient, type ShardLimits } from './ingest/shard-client';
import { IngestService } from './ingest/ingest-service';
import { createIntegrationRuntime } from './isolates';
import { installTemporalRuntime } from './temporal/runtime-logger';
import { stopOnSignals } from './lifecycle';
import { serveMetrics } from './metrics/server';
import { startTracing, type Tracing } from './tracing';
import { tracingWorkerOptions } from './tracing/temporal';

export interface WorkerOptions extends Omit<ActivityDependencies, 'log' | 'installations' | 'ingest'> {
  address: string;
  namespace: string;
  taskQueue: string;
  encryptionKey: string;
  /** Workflow and activity spans, exported with the process's. */
  tracing?: Tracing;
  /** A prebuilt bundle (tests build one per run); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkflowBundle;
  client: Client;
  stores: DeliveryLogStores;
  /** PLATFORM_DELIVERY_SHARDS: where installation events go. */
  deliveryShards: number;
  /** The delivery shards' limits (tests make them small; the defaults otherwise). */
  shardLimits?: ShardLimits;
}

/** The Temporal worker: every workflow and activity of the service on one task queue. */
export async function createWorker(options: WorkerOptions): Promise<Worker> {
  const connection = await NativeConnection.connect({ address: options.address });
  return Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    dataConverter: dataConverter(options.encryptionKey),
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: require.resolve('./workflows') }),
    activities: createActivities({ ...options, log: options.stores.log, installations: options.stores.installations, ingest: new IngestService(options.stores.log, options.stores.installations, new ShardClient(options.client, options.taskQueue, options.deliveryShards, options.shardLimits)) }),
    // Attempt batches wait on receivers, and retry batches wait for their time (up to 2 s,
    // holding only ids until then): many may be in flight at once. POSTs are bounded apart,
    // by the agents' sockets per origin.
    maxConcurrentActivityTaskExecutions: 500,
    // A drain waits this long for tasks in flight (attempts are idempotent; a cut batch runs again).
    shutdownForceTime: '5 seconds',
    // A shard whose worker died waits this long for it before another worker takes over
    // (10 s by default): the bench's worker SIGKILL measured deliveries back after 7-11 s.
    stickyQueueScheduleToStartTimeout: '2 seconds',
    ...tracingWorkerOptions(options.tracing, options.workflowBundle !== undefined),
  });
}

/** `node dist/src/worker.js`: the worker alone, configured from the environment (docker-compose). */
async function main(): Promise<void> {
  const config = configFromEnv();
  const logger = createLogger(config.logLevel, 'worker');
  installTemporalRuntime(logger);
  const tracing = startTracing({ url: config.otlpTracesUrl, serviceName: config.serviceName ?? 'platform-worker' });
  const platformPorts = platformPortsOf(config);
  await assertEgressAllowList(config.egressAllow, platformPorts);
  const settings = {
    address: requireSetting(config, 'temporalAddress', 'TEMPORAL_ADDRESS'),
    namespace: config.temporalNamespace,
    encryptionKey: requireSetting(config, 'encryptionKey', 'PLATFORM_ENCRYPTION_KEY'),
    tracing,
  };
  const stores = await openDeliveryLog({ url: config.databaseUrl, encryptionKey: settings.encryptionKey, namespace: settings.namespace, temporalUiUrl: config.temporalUiUrl });
  const client = await connectClient(settings);
  const { runtime, pool } = createIntegrationRuntime({ client, encryptionKey: settings.encryptionKey, baseUrl: config.baseUrl, apiUrl: config.internalApiUrl, egressGuard: egressGuard(config.egressAllow, platformPorts), platformPorts });
  const worker = await createWorker({
    ...settings,
    taskQueue: config.taskQueue,
    client,
    stores,
    runtime,
    baseUrl: config.baseUrl,
    deliveryShards: config.deliveryShards,
    webhookGuard: webhookGuard(config.allowPrivateTargets, platformPorts),
    retentionDays: config.retentionDays,
    logger,
  });
  const metrics = await serveMetrics(config.workerMetricsPort);
  logger.info({ taskQueue: config.taskQueue, metricsPort: metrics.port }, 'worker running');
  const running = worker.run();
  // The SDK's runtime starts draining the worker on SIGINT/SIGTERM; the stop waits for it, within its deadline.
  stopOnSignals(async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
    await Promise.all([pool.close(), client.connection.close(), metrics.close()]);
    await Promise.all([stores.close(), tracing?.shutdown()]);
  }, logger);
  await running;
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`worker failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
