import { setTimeout as sleep } from 'node:timers/promises';
import { setMaxListeners } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { createActivities, type ActivityDependencies } from './activities';
import type { Client } from '@temporalio/client';
import { dataConverter } from './temporal/client';
import type { EncryptionCodec } from './temporal/codec';
import type { Tracing } from './tracing';
import { tracingWorkerOptions } from './tracing/temporal';
import { retryTaskQueue } from './workflows/delivery-shard';
import { RETENTION_WORKFLOW_ID, retentionWorkflow } from './workflows/retention';
import { STRANDED_WORKFLOW_ID, strandedDeliveriesWorkflow } from './workflows/stranded';
import { settleAll } from './settle-all';
import { DIRECTORY_WORKFLOW_ID, directoryQuery } from './workflows/directory';

/** What activities take from the process's stores. */
type StoreNames = 'attempts' | 'sweeps' | 'installations' | 'directory' | 'integrationLogs' | 'operations' | 'events' | 'deliveries' | 'pace' | 'health';

export interface WorkerOptions extends Omit<ActivityDependencies, StoreNames> {
  address: string;
  namespace: string;
  taskQueue: string;
  /** The process's payload codec (its keys). */
  codec: EncryptionCodec;
  /** Workflow and activity spans, exported with the process's. */
  tracing?: Tracing;
  /** A bundle of the caller's (tests: the run's, or one with tracing's interceptors); otherwise the build's (see workflowsOf). */
  workflowBundle?: WorkflowBundleOption;
  client: Client;
  stores: Pick<ActivityDependencies, StoreNames>;
}

/** A process's Temporal workers, run and stopped together. */
export interface PlatformWorker {
  run(): Promise<void>;
  /** Begins the drain (attempt batches start no attempt from here on) and stops the workers; again, nothing more. */
  shutdown(): void;
}

/**
 * Where `npm run build` writes the workflows' bundles (src/platform/bundle-workflows.ts):
 * as they are, and with the workflow side of tracing's interceptors, which a worker that
 * traces needs in its bundle (the SDK ignores interceptor modules beside a bundle).
 */
export const PREBUILT_WORKFLOW_BUNDLE = path.join(__dirname, 'workflows.bundle.js');
export const PREBUILT_TRACED_WORKFLOW_BUNDLE = path.join(__dirname, 'workflows-traced.bundle.js');

/** The bundle given, else the one the build made for this worker, else the workflows bundled now (a build by `tsc` alone). */
function workflowsOf(given: WorkflowBundleOption | undefined, traced: boolean): { workflowBundle: WorkflowBundleOption } | { workflowsPath: string } {
  if (given) return { workflowBundle: given };
  const built = traced ? PREBUILT_TRACED_WORKFLOW_BUNDLE : PREBUILT_WORKFLOW_BUNDLE;
  return existsSync(built) ? { workflowBundle: { codePath: built } } : { workflowsPath: require.resolve('./workflows') };
}

/**
 * Activity slots of each attempt queue. A batch holds one while it waits on receivers (10 s
 * an attempt at most) and costs little else meanwhile (its ids, its sockets), and each
 * installation whose receiver hangs holds several, in each epoch's run: with 500, 80 of
 * them (1 event/s each) took the retry slots, and another tenant's retry 1 gaps reached
 * 7.2 s at p99, against 1.2 s with 2,000 (bench g; 4,000 did no better).
 */
const ATTEMPT_SLOTS = 2000;

/**
 * Batches a shard's workflow task may hand straight to this worker (eager activity
 * execution, on by default in the server) instead of through the task queue's matching:
 * a run that starts 200 installations' first batches at once had them dispatched at some
 * 20 a second, and everyone's batches queued behind them. SDK default 3. Bench (g), same
 * day: the tenant beside 200 neighbours served at once, p99 4.0-4.3 s -> 314-855 ms;
 * beside 200 failing ones, their first minute 1.6 s -> 667-949 ms.
 */
const EAGER_BATCHES_PER_TASK = 100;

/**
 * How long a stopping worker waits for attempts in flight to end by themselves, and then
 * for the interrupted ones' batches to record them: within the process's STOP_DEADLINE_MS
 * with the other parts' stops.
 */
const DRAIN_MS = 4000;
const INTERRUPTED_END_MS = 2000;

/**
 * The Temporal workers of a process: every workflow and activity of the service on its task
 * queue, and the delivery shards' retry batches on theirs (see retryTaskQueue), each with
 * slots of its own.
 */
export async function createWorker(options: WorkerOptions): Promise<PlatformWorker> {
  // The worker side's singletons (what runs on workers, not what requests need): idempotent across workers.
  for (const [workflow, workflowId] of [[retentionWorkflow, RETENTION_WORKFLOW_ID], [strandedDeliveriesWorkflow, STRANDED_WORKFLOW_ID]] as const) {
    await options.client.workflow.start(workflow, { workflowId, taskQueue: options.taskQueue, args: [], workflowIdConflictPolicy: 'USE_EXISTING' });
  }
  const connection = await NativeConnection.connect({ address: options.address });
  const stopped = new AbortController();
  // Every attempt batch in flight listens to it.
  setMaxListeners(0, stopped.signal);
  // Attempt batches start no attempt once the stop has begun (see AttemptBatchDependencies.draining).
  const activities = createActivities({ ...options, ...options.stores, draining: stopped.signal });
  const workflows = workflowsOf(options.workflowBundle, options.tracing !== undefined);
  const shared = {
    connection,
    namespace: options.namespace,
    dataConverter: dataConverter(options.codec),
    // A stop lets attempts in flight end by themselves for DRAIN_MS; then the rest are
    // interrupted (recorded so: their answer was not seen) and their batches end, so that
    // every attempt that went out is in the log and nothing is sent twice by a rerun.
    shutdownGraceTime: DRAIN_MS,
    shutdownForceTime: DRAIN_MS + INTERRUPTED_END_MS,
    ...tracingWorkerOptions(options.tracing, 'workflowBundle' in workflows),
  };
  const workers = [
    await Worker.create({
      ...shared,
      taskQueue: options.taskQueue,
      ...workflows,
      activities,
      maxConcurrentActivityTaskExecutions: ATTEMPT_SLOTS,
      maxEagerActivityReservationsPerWorkflowTask: EAGER_BATCHES_PER_TASK,
      // A shard whose worker died waits this long for it before another worker takes over
      // (10 s by default): the bench's worker SIGKILL measured deliveries back after 7-11 s.
      stickyQueueScheduleToStartTimeout: '2 seconds',
    }),
    await Worker.create({
      ...shared,
      taskQueue: retryTaskQueue(options.taskQueue),
      activities: { attemptDeliveries: activities.attemptDeliveries },
      // Retry batches wait for their time (up to 2 s, holding only ids until then), then on receivers.
      maxConcurrentActivityTaskExecutions: ATTEMPT_SLOTS,
    }),
  ];
  const shutdown = () => {
    stopped.abort();
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  return {
    async run() {
      // One failing stops the other (a process serves both queues or neither), and both
      // drain before this ends, so that nothing they hold is closed under them.
      const running = workers.map((worker) => worker.run().catch((err: unknown) => (shutdown(), Promise.reject(err))));
      await settleAll([...running, fillDirectoryReadModel(options, stopped.signal)]);
    },
    shutdown,
  };
}

/**
 * A directory from before its read model (migration 0005) fills it once from its workflow,
 * which this worker answers; from then on each creation writes its own entry. Tried again
 * every 2 s until it is filled or the worker stops.
 */
async function fillDirectoryReadModel({ client, stores, logger }: Pick<WorkerOptions, 'client' | 'stores' | 'logger'>, stopped: AbortSignal): Promise<void> {
  while (!stopped.aborted) {
    try {
      if (!(await stores.directory.lacksEntries())) return;
      const { orgs, users } = await client.workflow.getHandle(DIRECTORY_WORKFLOW_ID).query(directoryQuery);
      await stores.directory.save({ orgs: Object.values(orgs), users: Object.values(users) });
      return;
    } catch (err) {
      // No directory yet (the API starts it), no answer yet, or the delivery log down: the next round tries again.
      logger.debug({ err: (err as Error).message }, 'directory read model not filled yet');
      await sleep(2000, undefined, { signal: stopped }).catch(() => undefined);
    }
  }
}

// `node dist/src/worker.js` started the worker alone before `main.js worker`: say so rather than run nothing.
if (require.main === module) {
  process.stderr.write('dist/src/worker.js is no entry point any more: run `node dist/src/main.js worker`\n');
  process.exit(2);
}
