import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { AttemptBatchInput, AttemptBatchResult } from '../src/activities/attempt-batch';
import { deliveryEpochWorkflow, deliveryShardWorkflow, retryTaskQueue } from '../src/workflows/delivery-shard';
import { backlogQuery, handOverSignal, type ShardEntry, type ShardInput } from '../src/workflows/shard-contract';
import { FAILING_AFTER_ANSWER_MS } from '../src/webhooks/schedule';
import { namespaceFor } from './support/namespaces';
import { waitFor } from './support/platform';
import { testSettings } from './support/settings';

/**
 * The shard workflow on the run's dev server, its activities stood in for: what it asks of
 * the server, whatever the receivers do (their behaviour is tested through the platform).
 */
/** A batch the stand-in holds: its entries, and how the test ends it. */
interface HeldBatch {
  entries: AttemptBatchInput['entries'];
  /** The task queue it ran on: shared lanes' and retries' batches go to the retries' one. */
  taskQueue: string;
  end(results: AttemptBatchResult[]): void;
}
/** The installations a held batch's deliveries are for (ids `evt_…:installation`). */
const installationsOf = (batch: HeldBatch): string[] => [...new Set(batch.entries.map((entry) => entry.id.split(':')[1]!))].sort();

describe('the delivery shard workflow', function () {
  this.timeout(60_000);
  const namespace = namespaceFor(__filename);
  let connection: Connection;
  let client: Client;

  before(async function () {
    connection = await Connection.connect({ address: testSettings().address });
    client = new Client({ connection, namespace });
  });
  after(async () => connection?.close());

  /** Workers for one test: its own task queues (first attempts, and retries apart), the stand-in for attempt batches given. */
  async function standIn(attemptDeliveries: (input: AttemptBatchInput) => Promise<AttemptBatchResult[]>) {
    const taskQueue = `shard-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const connection = await NativeConnection.connect({ address: testSettings().address });
    const workers = [
      await Worker.create({
        connection,
        namespace,
        taskQueue,
        workflowBundle: { code: readFileSync(testSettings().bundle, 'utf8') },
        maxConcurrentActivityTaskExecutions: 1000,
        activities: { attemptDeliveries, async failDeliveries(): Promise<void> {} },
      }),
      await Worker.create({ connection, namespace, taskQueue: retryTaskQueue(taskQueue), maxConcurrentActivityTaskExecutions: 1000, activities: { attemptDeliveries } }),
    ];
    const running = workers.map((worker) => worker.run());
    return { taskQueue, stop: async () => (workers.forEach((worker) => worker.getState() === 'RUNNING' && worker.shutdown()), await Promise.all(running)) };
  }
  const delivered = (input: AttemptBatchInput): AttemptBatchResult[] => input.entries.map((entry) => ({ id: entry.id, status: 'delivered' }));
  /** A stand-in whose batches wait until the test ends each (stopping its worker ends those left), unless `answer` ends one at once. */
  async function heldBatches(answer?: (entries: AttemptBatchInput['entries']) => AttemptBatchResult[] | undefined) {
    const batches: HeldBatch[] = [];
    const worker = await standIn(
      (input) =>
        new Promise((end) => {
          batches.push({ entries: input.entries, taskQueue: Context.current().info.taskQueue, end });
          const results = answer?.(input.entries);
          if (results) end(results);
        }),
    );
    const stop = async () => {
      for (const batch of batches) batch.end([]);
      await worker.stop();
    };
    return { batches, worker: { ...worker, stop } };
  }
  /** Until the shard holds nothing, then its run ends. */
  async function settled(handle: WorkflowHandle): Promise<void> {
    await waitFor(async () => ((await handle.query(backlogQuery)) === 0 ? true : undefined), 10_000, 'every delivery settled');
    await handle.terminate('test over');
  }

  it('keeps at most 500 attempt batches in flight (the server fails a task past 2,000 pending activities), and every installation has its turn', async function () {
    this.timeout(150_000);
    const attempted = new Set<string>();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const worker = await standIn(async (input) => {
      await released;
      for (const entry of input.entries) attempted.add(entry.id);
      return delivered(input);
    });
    try {
      // 600 installations with a delivery each: one batch each, were there no cap.
      const entries: ShardEntry[] = Array.from({ length: 600 }, (_, i) => ({ id: `evt_cap:ins_${i}`, installationId: `ins_${i}`, attempt: 1, dueAt: 0 }));
      const handle = await client.workflow.start(deliveryShardWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/cap-${worker.taskQueue}`, args: [{ shard: 0, entries }] });
      const pending = async () => (await handle.describe()).raw.pendingActivities?.length ?? 0;
      await waitFor(async () => ((await pending()) > 0 ? true : undefined), 10_000, 'batches to be scheduled');
      assert.equal(await pending(), 500);
      release();
      // Their turns, not their pace, are the property: 600 activities through the dev server,
      // which dispatched ~22 a second on a quiet machine; a CI run loaded by the rest of the suite took over 45 s.
      await waitFor(async () => (attempted.size === 600 ? true : undefined), 120_000, 'every installation to be attempted');
      await waitFor(async () => ((await pending()) === 0 ? true : undefined), 10_000, 'no batch left in flight');
      await handle.terminate('test over');
    } finally {
      release();
      await worker.stop();
    }
  });

  it('keeps up to four full batches of one installation in flight, and starts a partial one only when none is', async function () {
    const batches: number[] = [];
    const releases: (() => void)[] = [];
    const worker = await standIn(async (input) => {
      batches.push(input.entries.length);
      await new Promise<void>((resolve) => releases.push(resolve));
      return delivered(input);
    });
    try {
      const entries: ShardEntry[] = Array.from({ length: 450 }, (_, i) => ({ id: `evt_${i}:ins_busy`, installationId: 'ins_busy', attempt: 1, dueAt: 0 }));
      const handle = await client.workflow.start(deliveryShardWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/lane-${worker.taskQueue}`, args: [{ shard: 0, entries }] });
      await waitFor(async () => (batches.length >= 4 ? true : undefined), 10_000, 'four batches in flight');
      assert.equal((await handle.describe()).raw.pendingActivities?.length, 4);
      assert.deepEqual(batches, [100, 100, 100, 100], 'the last 50 wait for a lane slot');
      // Three of the four end, one by one: the 50 still wait while one batch is in flight.
      for (let ended = 1; ended <= 3; ended++) {
        releases.shift()!();
        await waitFor(async () => ((await handle.describe()).raw.pendingActivities?.length === 4 - ended ? true : undefined), 10_000, `${ended} batches to end`);
        assert.equal(batches.length, 4, `no partial batch with ${4 - ended} in flight`);
      }
      releases.shift()!();
      await waitFor(async () => (batches.length === 5 ? true : undefined), 10_000, 'the partial batch');
      assert.equal(batches[4], 50);
      releases.shift()!();
      await settled(handle);
    } finally {
      for (const release of releases) release();
      await worker.stop();
    }
  });

  it('batches together the retries of receivers that fail every attempt (a lane shared across installations), until one answers; an interrupted attempt is no failure of its receiver', async function () {
    const { batches, worker } = await heldBatches();
    const answered = (batch: HeldBatch, outcome: (id: string) => Partial<AttemptBatchResult>) => batch.end(batch.entries.map((entry) => ({ id: entry.id, status: 'pending', retryInMs: 60_000, ...outcome(entry.id) })));
    try {
      const start = Date.now();
      const retries = (installation: string, from: number, count: number, dueAt: number): ShardEntry[] => Array.from({ length: count }, (_, i) => ({ id: `evt_${from + i}:${installation}`, installationId: installation, attempt: 2, dueAt }));
      const entries = [...['ins_a', 'ins_b', 'ins_c'].flatMap((installation) => [...retries(installation, 0, 1, 0), ...retries(installation, 1, 5, start + 2000), ...retries(installation, 6, 1, start + 5000)])];
      const handle = await client.workflow.start(deliveryShardWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/failing-${worker.taskQueue}`, args: [{ shard: 0, entries }] });
      await waitFor(async () => (batches.length === 3 ? true : undefined), 10_000, 'the first retries, a batch each');
      assert.deepEqual(batches.map(installationsOf).sort(), [['ins_a'], ['ins_b'], ['ins_c']]);
      // Two receivers refuse: from now on they share a lane. ins_c's attempt was cut off by its worker stopping: its own lane still.
      for (const batch of batches) answered(batch, (id) => ({ error: id.endsWith(':ins_c') ? 'interrupted' : 'connection_refused' }));
      await waitFor(async () => (batches.length === 5 ? true : undefined), 10_000, 'the 15 due next');
      const [shared, own] = [batches[3]!, batches[4]!].sort((x, y) => y.entries.length - x.entries.length);
      assert.deepEqual([shared!.entries.length, installationsOf(shared!)], [10, ['ins_a', 'ins_b']], 'one batch across both');
      assert.deepEqual(installationsOf(own!), ['ins_c'], 'an interruption is the platform’s failure, not its receiver’s');
      // ins_a's receiver answers (a 400 is an answer); ins_b's still refuses.
      answered(shared!, (id) => (id.endsWith(':ins_a') ? { statusCode: 400, status: 'failed', retryInMs: undefined } : { error: 'connection_refused' }));
      answered(own!, () => ({ statusCode: 200, status: 'delivered', retryInMs: undefined }));
      await waitFor(async () => (batches.length === 8 ? true : undefined), 15_000, 'the last retries');
      assert.deepEqual(batches.slice(5).map(installationsOf).sort(), [['ins_a'], ['ins_b'], ['ins_c']], 'ins_a back in a lane of its own');
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it("batches receivers a hand-over says are failing together from their first attempt, unless the run has seen one answer", async function () {
    const { batches, worker } = await heldBatches();
    try {
      const input: ShardInput = { shard: 0, epochEndsAt: Date.now() + 60_000 };
      const handle = await client.workflow.start(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/hinted-${worker.taskQueue}`, args: [input] });
      const item = (event: number, installationId: string, failing?: 'slow' | 'fast') => ({ id: `evt_${event}:${installationId}`, installationId, ...(failing && { failing }) });
      await handle.signal(handOverSignal, [item(1, 'ins_h1', 'slow'), item(1, 'ins_h2', 'slow'), item(1, 'ins_ok')]);
      await waitFor(async () => (batches.length === 2 ? true : undefined), 10_000, 'the first attempts');
      assert.deepEqual(batches.map(installationsOf).sort(), [['ins_h1', 'ins_h2'], ['ins_ok']], 'the two hinted share a batch');
      // ins_h1's receiver answers; ins_h2's times out.
      const shared = batches.find((batch) => batch.entries.length === 2)!;
      shared.end(shared.entries.map((entry) => (entry.id.endsWith(':ins_h1') ? { id: entry.id, status: 'delivered', statusCode: 200 } : { id: entry.id, status: 'pending', retryInMs: 60_000, error: 'timeout' })));
      batches.find((batch) => batch !== shared)!.end([{ id: 'evt_1:ins_ok', status: 'delivered', statusCode: 200 }]);
      await waitFor(async () => ((await handle.query(backlogQuery)) === 1 ? true : undefined), 10_000, 'the answers taken (ins_h2 waits for its retry)');
      // Hints about receivers the run has seen answer (a log read before that) move neither; ins_h2, seen failing, stays shared.
      await handle.signal(handOverSignal, [item(2, 'ins_h1', 'slow'), item(2, 'ins_h2', 'slow'), item(2, 'ins_ok', 'fast')]);
      await waitFor(async () => (batches.length === 5 ? true : undefined), 10_000, 'the second hand-over in three batches');
      assert.deepEqual(batches.slice(2).map(installationsOf).sort(), [['ins_h1'], ['ins_h2'], ['ins_ok']]);
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it('moves what a receiver found failing (by a batch, or by a hand-over) had queued to the shared lane: no second batch of its own hangs for the attempt timeout', async function () {
    const { batches, worker } = await heldBatches();
    try {
      const handle = await client.workflow.start(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/follow-${worker.taskQueue}`, args: [{ shard: 0, epochEndsAt: Date.now() + 60_000 }] });
      const installations = ['ins_h1', 'ins_h2', 'ins_h3', 'ins_ok'];
      const items = (event: number) => installations.map((installationId) => ({ id: `evt_${event}:${installationId}`, installationId }));
      await handle.signal(handOverSignal, items(1));
      await waitFor(async () => (batches.length === 4 ? true : undefined), 10_000, 'a first batch each');
      // Behind each first batch (a partial one in flight), two more queue in the installation's own lane.
      await handle.signal(handOverSignal, [...items(2), ...items(3)]);
      await waitFor(async () => ((await handle.query(backlogQuery)) === 12 ? true : undefined), 10_000, 'the eight queued');
      assert.equal(batches.length, 4, 'queued behind the partial batches in flight');
      // The log says ins_h3's receiver hangs (another run's batch timed out): what it queued goes at once, in the shared lane.
      await handle.signal(handOverSignal, [{ id: 'evt_4:ins_h3', installationId: 'ins_h3', failing: 'slow' }]);
      await waitFor(async () => (batches.length === 5 ? true : undefined), 10_000, 'the hinted one’s queued');
      assert.deepEqual([installationsOf(batches[4]!), batches[4]!.entries.length, batches[4]!.taskQueue], [['ins_h3'], 3, retryTaskQueue(worker.taskQueue)], 'in the shared lane, beside its own batch still in flight');
      // ins_h1's and ins_h2's attempts (and ins_h3's) time out; ins_ok's receiver answers.
      for (const batch of batches.slice(0, 4)) batch.end(batch.entries.map((entry) => (entry.id.endsWith(':ins_ok') ? { id: entry.id, status: 'delivered', statusCode: 200 } : { id: entry.id, status: 'pending', retryInMs: 60_000, error: 'timeout' })));
      const queued = (installation: string) => [`evt_2:${installation}`, `evt_3:${installation}`];
      const startedIds = () => batches.slice(5).flatMap((batch) => batch.entries.map((entry) => entry.id));
      await waitFor(async () => (['ins_h1', 'ins_h2', 'ins_ok'].flatMap(queued).every((id) => startedIds().includes(id)) ? true : undefined), 10_000, 'what was queued');
      // However the results came in (one workflow task or several), the failing two's went in the shared lane's batches, ins_ok's in its own.
      for (const batch of batches.slice(5)) {
        const installations = installationsOf(batch);
        if (installations.includes('ins_ok')) assert.deepEqual([installations, batch.taskQueue], [['ins_ok'], worker.taskQueue]);
        else assert.equal(batch.taskQueue, retryTaskQueue(worker.taskQueue), `${installations} in a shared lane`);
      }
      assert.equal(startedIds().length, 6, 'each once');
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it('keeps the lanes of a receiver that answered (or was said to be prompt) within 2 s through a batch it failed fast throughout (a 500 to some events is not down); 2 s on, the shared lane', async function () {
    const answers = { ok: { status: 'delivered', statusCode: 200, tookMs: 20 }, error: { status: 'pending', retryInMs: 60_000, statusCode: 500, tookMs: 20 }, refused: { status: 'pending', retryInMs: 60_000, error: 'connection_refused' } } as const;
    const results = (entries: AttemptBatchInput['entries'], answer: (installation: string) => Omit<AttemptBatchResult, 'id'>) => entries.map((entry) => ({ id: entry.id, ...answer(entry.id.split(':')[1]!) }));
    // The first two rounds are answered at once, the second 500 throughout: within 2 s of the first unless the machine stalls that long.
    const { batches, worker } = await heldBatches((entries) =>
      entries.every((entry) => entry.id.startsWith('evt_1:')) ? results(entries, (installation) => (installation === 'ins_r' ? answers.refused : answers.ok)) : entries.every((entry) => entry.id.startsWith('evt_2:')) ? results(entries, () => answers.error) : undefined,
    );
    const round = (event: number, installations: string[]) => installations.map((installationId) => ({ id: `evt_${event}:${installationId}`, installationId }));
    const batchOf = (id: string) => batches.find((batch) => batch.entries.some((entry) => entry.id === id));
    try {
      const handle = await client.workflow.start(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/after-answer-${worker.taskQueue}`, args: [{ shard: 0, epochEndsAt: Date.now() + 60_000 }] });
      // ins_f's and ins_p's receivers answer at once (prompt); ins_r's refuses (failing).
      await handle.signal(handOverSignal, round(1, ['ins_f', 'ins_p', 'ins_r']));
      await waitFor(async () => (batches.length === 3 ? true : undefined), 10_000, 'a batch each');
      // ins_f's receiver answers its next event 500; so does ins_g's, new to the run, which a hand-over says is prompt.
      await handle.signal(handOverSignal, [...round(2, ['ins_f']), { id: 'evt_2:ins_g', installationId: 'ins_g', prompt: true }]);
      await waitFor(async () => ((await handle.query(backlogQuery)) === 3 ? true : undefined), 10_000, 'the 500s taken (ins_r, ins_f and ins_g wait for their retries)');
      await handle.signal(handOverSignal, round(3, ['ins_f', 'ins_g', 'ins_p', 'ins_r']));
      await waitFor(async () => (round(3, ['ins_f', 'ins_g', 'ins_p', 'ins_r']).every((item) => batchOf(item.id)) ? true : undefined), 10_000, 'the third round');
      assert.deepEqual(installationsOf(batchOf('evt_3:ins_f')!), ['ins_f', 'ins_g', 'ins_p'], 'ins_f and ins_g still in the prompt lane');
      assert.deepEqual(installationsOf(batchOf('evt_3:ins_r')!), ['ins_r'], 'the refusing one in the shared lane');
      // Past the 2 s since its last answer, a batch failing throughout moves it to the shared lane.
      await new Promise((resolve) => setTimeout(resolve, FAILING_AFTER_ANSWER_MS));
      for (const batch of new Set([batchOf('evt_3:ins_f')!, batchOf('evt_3:ins_r')!])) batch.end(results(batch.entries, (installation) => (installation === 'ins_p' ? answers.ok : installation === 'ins_r' ? answers.refused : answers.error)));
      await waitFor(async () => ((await handle.query(backlogQuery)) === 6 ? true : undefined), 10_000, 'the third answers taken');
      await handle.signal(handOverSignal, round(4, ['ins_f', 'ins_p', 'ins_r']));
      await waitFor(async () => (round(4, ['ins_f', 'ins_p', 'ins_r']).every((item) => batchOf(item.id)) ? true : undefined), 10_000, 'the fourth round');
      assert.deepEqual(installationsOf(batchOf('evt_4:ins_f')!), ['ins_f', 'ins_r']);
      assert.deepEqual(installationsOf(batchOf('evt_4:ins_p')!), ['ins_p']);
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it('keeps at most four batches of the receivers failing every attempt in flight (their shared lane), whatever their number', async function () {
    const { batches, worker } = await heldBatches();
    const timedOut = (batch: HeldBatch) => batch.end(batch.entries.map((entry) => ({ id: entry.id, status: 'failed', error: 'timeout' })));
    try {
      const handle = await client.workflow.start(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/shared-cap-${worker.taskQueue}`, args: [{ shard: 0, epochEndsAt: Date.now() + 60_000 }] });
      // 20 installations whose receivers hang, 30 deliveries each: 6 batches' worth in one lane.
      const items = Array.from({ length: 600 }, (_, i) => ({ id: `evt_${i}:ins_h${i % 20}`, installationId: `ins_h${i % 20}`, failing: 'slow' as const }));
      await handle.signal(handOverSignal, items);
      await waitFor(async () => (batches.length === 4 ? true : undefined), 10_000, 'four batches');
      assert.equal((await handle.describe()).raw.pendingActivities?.length, 4);
      assert.equal(batches.length, 4, 'the other two wait for a slot');
      assert.equal(new Set(batches.flatMap((batch) => batch.entries.map((entry) => entry.id.split(':')[1]))).size, 20, 'every installation in the shared lane');
      // One ends: one more starts, and no other.
      timedOut(batches[0]!);
      await waitFor(async () => (batches.length === 5 ? true : undefined), 10_000, 'a fifth batch');
      assert.equal((await handle.describe()).raw.pendingActivities?.length, 4);
      for (const batch of batches.slice(1)) timedOut(batch);
      await waitFor(async () => (batches.length === 6 ? true : undefined), 10_000, 'the sixth batch');
      timedOut(batches[5]!);
      await waitFor(async () => ((await handle.query(backlogQuery)) === 0 ? true : undefined), 10_000, 'every delivery final');
      assert.equal(batches.reduce((sum, batch) => sum + batch.entries.length, 0), 600, 'each attempted once');
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it('batches the first attempts of receivers it has seen answer promptly together, across installations; one that lags, or turns slow, keeps or gets back a lane of its own', async function () {
    const { batches, worker } = await heldBatches();
    const answered = (batch: HeldBatch, tookMs: (installation: string) => number) => batch.end(batch.entries.map((entry) => ({ id: entry.id, status: 'delivered', statusCode: 200, tookMs: tookMs(entry.id.split(':')[1]!) })));
    const item = (event: number, installationId: string) => ({ id: `evt_${event}:${installationId}`, installationId });
    const round = (event: number) => ['ins_a', 'ins_b', 'ins_c', 'ins_d'].map((installation) => item(event, installation));
    try {
      const handle = await client.workflow.start(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/prompt-${worker.taskQueue}`, args: [{ shard: 0, epochEndsAt: Date.now() + 60_000 }] });
      // Unknown to the run: a lane each. ins_c's receiver takes 2 s to answer; the others 20-30 ms.
      await handle.signal(handOverSignal, round(1));
      await waitFor(async () => (batches.length === 4 ? true : undefined), 10_000, 'the first attempts, a batch each');
      assert.deepEqual(batches.map(installationsOf).sort(), [['ins_a'], ['ins_b'], ['ins_c'], ['ins_d']]);
      for (const batch of batches) answered(batch, (installation) => (installation === 'ins_c' ? 2000 : 20));
      await waitFor(async () => ((await handle.query(backlogQuery)) === 0 ? true : undefined), 10_000, 'the answers taken');
      await handle.signal(handOverSignal, round(2));
      await waitFor(async () => (batches.length === 6 ? true : undefined), 10_000, 'the second round in two batches');
      const [shared, own] = [batches[4]!, batches[5]!].sort((x, y) => y.entries.length - x.entries.length);
      assert.deepEqual(installationsOf(shared!), ['ins_a', 'ins_b', 'ins_d'], 'the prompt ones share a batch');
      assert.deepEqual(installationsOf(own!), ['ins_c'], 'the one that lags keeps its own');
      // ins_b's receiver turns slow (3 s): its next first attempt is in a lane of its own again.
      answered(shared!, (installation) => (installation === 'ins_b' ? 3000 : 20));
      answered(own!, () => 2000);
      await waitFor(async () => ((await handle.query(backlogQuery)) === 0 ? true : undefined), 10_000, 'the second answers taken');
      await handle.signal(handOverSignal, round(3));
      await waitFor(async () => (batches.length === 9 ? true : undefined), 10_000, 'the third round in three batches');
      assert.deepEqual(batches.slice(6).map(installationsOf).sort(), [['ins_a', 'ins_d'], ['ins_b'], ['ins_c']]);
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it('batches receivers a hand-over says are prompt together from their first attempt, unless the run has seen them lag', async function () {
    const { batches, worker } = await heldBatches();
    const item = (event: number, installationId: string, prompt?: boolean) => ({ id: `evt_${event}:${installationId}`, installationId, ...(prompt && { prompt: true as const }) });
    try {
      const handle = await client.workflow.start(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/prompt-hinted-${worker.taskQueue}`, args: [{ shard: 0, epochEndsAt: Date.now() + 60_000 }] });
      await handle.signal(handOverSignal, [item(1, 'ins_p1', true), item(1, 'ins_p2', true), item(1, 'ins_lag')]);
      await waitFor(async () => (batches.length === 2 ? true : undefined), 10_000, 'the first attempts');
      assert.deepEqual(batches.map(installationsOf).sort(), [['ins_lag'], ['ins_p1', 'ins_p2']], 'the two hinted share a batch');
      // ins_lag's receiver takes 2 s: a hint that it is prompt (a log read before that) does not move it.
      for (const batch of batches) batch.end(batch.entries.map((entry) => ({ id: entry.id, status: 'delivered', statusCode: 200, tookMs: entry.id.endsWith(':ins_lag') ? 2000 : 20 })));
      await waitFor(async () => ((await handle.query(backlogQuery)) === 0 ? true : undefined), 10_000, 'the answers taken');
      await handle.signal(handOverSignal, [item(2, 'ins_p1', true), item(2, 'ins_p2', true), item(2, 'ins_lag', true)]);
      await waitFor(async () => (batches.length === 4 ? true : undefined), 10_000, 'the second hand-over in two batches');
      assert.deepEqual(batches.slice(2).map(installationsOf).sort(), [['ins_lag'], ['ins_p1', 'ins_p2']]);
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it('keeps up to four partial batches of prompt receivers in flight side by side, and full ones up to sixteen', async function () {
    const { batches, worker } = await heldBatches();
    const answered = (batch: HeldBatch) => batch.end(batch.entries.map((entry) => ({ id: entry.id, status: 'delivered', statusCode: 200, tookMs: 10 })));
    const item = (event: number) => ({ id: `evt_${event}:ins_p${event % 2}`, installationId: `ins_p${event % 2}` });
    const pending = async (handle: WorkflowHandle) => (await handle.describe()).raw.pendingActivities?.length ?? 0;
    try {
      const handle = await client.workflow.start(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/prompt-caps-${worker.taskQueue}`, args: [{ shard: 0, epochEndsAt: Date.now() + 60_000 }] });
      await handle.signal(handOverSignal, [item(0), item(1)]);
      await waitFor(async () => (batches.length === 2 ? true : undefined), 10_000, 'a batch per installation');
      batches.forEach(answered);
      await waitFor(async () => ((await handle.query(backlogQuery)) === 0 ? true : undefined), 10_000, 'both seen prompt');
      // Five hand-overs of two, one after the other: four partial batches go side by side, the fifth waits for a slot.
      for (let k = 1; k <= 5; k++) {
        await handle.signal(handOverSignal, [item(2 * k), item(2 * k + 1)]);
        await waitFor(async () => ((await handle.query(backlogQuery)) === 2 * k ? true : undefined), 10_000, `hand-over ${k} taken`);
      }
      await waitFor(async () => (batches.length === 6 ? true : undefined), 10_000, 'four partial batches');
      assert.equal(await pending(handle), 4);
      assert.deepEqual(batches.slice(2).map((batch) => batch.entries.length), [2, 2, 2, 2], 'across both installations');
      // 1,600 more (the fifth hand-over's two first): full batches beside the partial ones, up to 16 in all.
      await handle.signal(handOverSignal, Array.from({ length: 1600 }, (_, i) => item(100 + i)));
      await waitFor(async () => (batches.length === 18 ? true : undefined), 10_000, 'twelve full batches beside');
      assert.equal(await pending(handle), 16);
      assert.deepEqual(batches.slice(6).map((batch) => batch.entries.length), Array(12).fill(100));
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it('carries which receivers fail every attempt when it continues as new: their retries still share a batch', async function () {
    const { batches, worker } = await heldBatches();
    const hangingBatches = () => batches.filter((batch) => batch.entries.every((entry) => !entry.id.endsWith(':ins_other')));
    try {
      const start = Date.now();
      const retries = (installation: string, from: number, count: number, dueAt: number): ShardEntry[] => Array.from({ length: count }, (_, i) => ({ id: `evt_${from + i}:${installation}`, installationId: installation, attempt: 2, dueAt }));
      // One retry of each due now; 5 of each due in 6 s, after the run has continued as new.
      const due = start + 6000;
      const input: ShardInput = { shard: 0, epochEndsAt: start + 60_000, handOversPerRun: 1, entries: ['ins_h1', 'ins_h2'].flatMap((installation) => [...retries(installation, 0, 1, 0), ...retries(installation, 1, 5, due)]) };
      const handle = await client.workflow.start(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/failing-carried-${worker.taskQueue}`, args: [input] });
      await waitFor(async () => (batches.length === 2 ? true : undefined), 10_000, 'the first retries');
      for (const batch of batches) batch.end(batch.entries.map((entry) => ({ id: entry.id, status: 'pending', retryInMs: 60_000, error: 'timeout' })));
      const firstRun = (await handle.describe()).runId;
      // Its one hand-over per run taken, the run continues as new with the 10 retries waiting.
      await handle.signal(handOverSignal, [{ id: 'evt_x:ins_other', installationId: 'ins_other' }]);
      await waitFor(async () => ((await handle.describe()).runId !== firstRun ? true : undefined), 10_000, 'the run to continue as new');
      assert.ok(Date.now() < due - 2000, 'the run continued as new well before the retries it carries were due (the lead is 1.5 s)');
      await waitFor(async () => (hangingBatches().length === 3 ? true : undefined), 15_000, 'the 10 due');
      assert.deepEqual(hangingBatches()[2]!.entries.map((entry) => entry.id.split(':')[1]).sort(), [...Array(5).fill('ins_h1'), ...Array(5).fill('ins_h2')], 'one batch across both, in the new run');
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it('takes hand-overs for its epoch, then completes once what it took is final (a retry due after the epoch keeps it open); a late hand-over starts it again', async function () {
    const attempts: string[] = [];
    const worker = await standIn(async (input) => {
      attempts.push(...input.entries.map((entry) => `${entry.id}#${entry.attempt}`));
      return input.entries.map((entry) => (entry.id === 'evt_2:ins_a' && entry.attempt === 1 ? { id: entry.id, status: 'pending', retryInMs: 3500 } : { id: entry.id, status: 'delivered' }));
    });
    try {
      const started = Date.now();
      const input: ShardInput = { shard: 0, epochEndsAt: started + 500 };
      const handle = await client.workflow.signalWithStart(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/epoch-${worker.taskQueue}`, args: [input], signal: handOverSignal, signalArgs: [[{ id: 'evt_1:ins_a', installationId: 'ins_a' }, { id: 'evt_2:ins_a', installationId: 'ins_a' }]] });
      await waitFor(async () => (attempts.length === 2 ? true : undefined), 10_000, 'the first attempts');
      // Past the epoch and its 2 s grace, the retry still waits: the workflow stays open for it.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + 3000 - Date.now())));
      assert.equal((await handle.describe()).status.name, 'RUNNING');
      await waitFor(async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined), 10_000, 'the workflow to complete');
      assert.deepEqual(attempts, ['evt_1:ins_a#1', 'evt_2:ins_a#1', 'evt_2:ins_a#2']);
      assert.equal((await handle.describe()).runId, handle.signaledRunId, 'the run that took the hand-over completed: no continue-as-new');
      // A hand-over sent late (a sender whose clock is behind) starts the epoch's workflow again: attempted, then complete.
      const late = await client.workflow.signalWithStart(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/epoch-${worker.taskQueue}`, args: [input], signal: handOverSignal, signalArgs: [[{ id: 'evt_3:ins_a', installationId: 'ins_a' }]] });
      assert.notEqual(late.signaledRunId, handle.signaledRunId);
      await waitFor(async () => ((await late.describe()).status.name === 'COMPLETED' ? true : undefined), 10_000, 'the late run to complete');
      assert.deepEqual(attempts.slice(3), ['evt_3:ins_a#1']);
    } finally {
      await worker.stop();
    }
  });

  it('wakes on one timer while hand-overs trickle in, rather than starting a timer in each workflow task and cancelling it in the next', async function () {
    const HAND_OVERS = 8;
    let batches = 0;
    let handedOver = 0;
    // Each batch ends once the next hand-over is in the workflow's history (the last at once), and each
    // hand-over goes once the batch before it has started: every one meets the run between workflow tasks.
    const worker = await standIn(async (input) => {
      const batch = ++batches;
      await waitFor(async () => (handedOver > batch || batch === HAND_OVERS ? true : undefined), 30_000, 'the next hand-over', 10);
      return delivered(input);
    });
    try {
      const input: ShardInput = { shard: 0, epochEndsAt: Date.now() + 1000 };
      const workflowId = `delivery-shard/trickle-${worker.taskQueue}`;
      for (let i = 0; i < HAND_OVERS; i++) {
        await client.workflow.signalWithStart(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId, args: [input], signal: handOverSignal, signalArgs: [[{ id: `evt_${i}:ins_a`, installationId: 'ins_a' }]] });
        handedOver = i + 1;
        await waitFor(async () => (batches === i + 1 ? true : undefined), 30_000, `batch ${i + 1}`, 10);
      }
      const handle = client.workflow.getHandle(workflowId);
      await waitFor(async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined), 10_000, 'the workflow to complete');
      const events = (await handle.fetchHistory()).events!;
      const count = (has: (event: (typeof events)[number]) => unknown) => events.filter(has).length;
      assert.equal(count((event) => event.activityTaskCompletedEventAttributes), HAND_OVERS, 'a batch for each hand-over');
      assert.ok(count((event) => event.workflowTaskCompletedEventAttributes) >= HAND_OVERS, 'a workflow task at least for each batch');
      assert.equal(count((event) => event.timerStartedEventAttributes), 1, 'one timer: the end of the epoch and its grace');
      assert.equal(count((event) => event.timerCanceledEventAttributes), 0);
    } finally {
      await worker.stop();
    }
  });

  it('makes the same attempt again, later, of a delivery its batch did not attempt (no room for integration code), on its first attempts\u2019 queue', async function () {
    const batches: { at: number; attempt: number; taskQueue: string }[] = [];
    let againAt = 0;
    const worker = await standIn(async (input) => {
      batches.push({ at: Date.now(), attempt: input.entries[0]!.attempt, taskQueue: Context.current().info.taskQueue });
      if (batches.length > 1) return delivered(input);
      againAt = Date.now() + 2000;
      return input.entries.map((entry) => ({ id: entry.id, status: 'pending', again: true, retryInMs: 2000, retryAt: againAt, clock: 'worker-a' }));
    });
    try {
      const workflowId = `delivery-shard/again-${worker.taskQueue}`;
      await client.workflow.signalWithStart(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId, args: [{ shard: 0, epochEndsAt: Date.now() + 1000 }], signal: handOverSignal, signalArgs: [[{ id: 'evt_1:ins_a', installationId: 'ins_a' }]] });
      const handle = client.workflow.getHandle(workflowId);
      await waitFor(async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined), 15_000, 'the workflow to complete');
      assert.deepEqual(batches.map(({ attempt, taskQueue }) => [attempt, taskQueue]), [[1, worker.taskQueue], [1, worker.taskQueue]], 'attempt 1 twice, on the first attempts\u2019 queue');
      assert.ok(batches[1]!.at >= againAt - 1500, 'not before its wait (less the lead)');
    } finally {
      await worker.stop();
    }
  });

  it('replaces its wake-up timer when an earlier one is wanted: a retry due before the epoch’s end goes out on time, and the run replays', async function () {
    const batches: { at: number; attempt: number }[] = [];
    let retryAt = 0;
    const worker = await standIn(async (input) => {
      batches.push({ at: Date.now(), attempt: input.entries[0]!.attempt });
      if (input.entries[0]!.attempt > 1) return delivered(input);
      retryAt = Date.now() + 2500;
      return input.entries.map((entry) => ({ id: entry.id, status: 'pending', retryInMs: 2500, retryAt, clock: 'worker-a' }));
    });
    try {
      // The epoch's end (and its grace) is the first wake-up wanted, 5 s ahead; the retry's lead wants one in 1 s.
      const input: ShardInput = { shard: 0, epochEndsAt: Date.now() + 3000 };
      const workflowId = `delivery-shard/replace-${worker.taskQueue}`;
      await client.workflow.signalWithStart(deliveryEpochWorkflow, { taskQueue: worker.taskQueue, workflowId, args: [input], signal: handOverSignal, signalArgs: [[{ id: 'evt_1:ins_a', installationId: 'ins_a' }]] });
      await waitFor(async () => (batches.length === 2 ? true : undefined), 10_000, 'the retry');
      // Started ahead of its time (1.5 s, less the whole second a timer may round up to) or, on a loaded
      // machine, just after it; the epoch's timer would have started it at the epoch's end and grace (2 s).
      assert.ok(batches[1]!.at < retryAt + 1000 && batches[1]!.at < input.epochEndsAt! + 1500, `the retry's batch started ${batches[1]!.at - retryAt} ms after its time`);
      const handle = client.workflow.getHandle(workflowId);
      await waitFor(async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined), 15_000, 'the workflow to complete');
      const history = await handle.fetchHistory();
      assert.equal(history.events!.filter((event) => event.timerCanceledEventAttributes).length, 1, 'the epoch’s timer, replaced by the retry’s');
      await Worker.runReplayHistory({ workflowBundle: { code: readFileSync(testSettings().bundle, 'utf8') } }, history, workflowId);
    } finally {
      await worker.stop();
    }
  });

  it('starts a retry batch 1.5 s ahead of its time (timers fire on whole seconds) on the retries’ task queue, with each retry’s exact time, retries due within 500 ms of the earliest together, and a batch beside one still waiting', async function () {
    const batches: { at: number; entries: AttemptBatchInput['entries']; taskQueue: string }[] = [];
    const offsets: Record<string, number> = { 'evt_1:ins_a': 0, 'evt_2:ins_a': 400, 'evt_3:ins_a': 3000 };
    let retryAt = 0;
    const releases: (() => void)[] = [];
    const worker = await standIn(async (input) => {
      if (input.entries[0]!.id.startsWith('evt_wake')) return delivered(input);
      batches.push({ at: Date.now(), entries: input.entries, taskQueue: Context.current().info.taskQueue });
      if (input.entries[0]!.attempt === 1) {
        // Two retries 400 ms apart, one 3 s later.
        retryAt = Date.now() + 3000;
        return input.entries.map((entry) => ({ id: entry.id, status: 'pending', retryInMs: 3000 + offsets[entry.id]!, retryAt: retryAt + offsets[entry.id]!, clock: 'worker-a' }));
      }
      // The first retry batch waits (as the real one does for its time) until released.
      if (input.entries.some((entry) => entry.id === 'evt_1:ins_a')) await new Promise<void>((resolve) => releases.push(resolve));
      return delivered(input);
    });
    try {
      const entries: ShardEntry[] = ['evt_1:ins_a', 'evt_2:ins_a', 'evt_3:ins_a'].map((id) => ({ id, installationId: 'ins_a', attempt: 1, dueAt: 0 }));
      const handle = await client.workflow.start(deliveryShardWorkflow, { taskQueue: worker.taskQueue, workflowId: `delivery-shard/lead-${worker.taskQueue}`, args: [{ shard: 0, entries }] });
      await waitFor(async () => (batches.length === 1 ? true : undefined), 10_000, 'the first attempts');
      // A hand-over wakes the shard just after the first retry's batch is due (its timer may fire up to a second
      // later): the retries that batch takes are those due within the grouping of that moment, whatever the timer does.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, retryAt - 1500 + 20 - Date.now())));
      await handle.signal(handOverSignal, [{ id: 'evt_wake:ins_b', installationId: 'ins_b' }]);
      await waitFor(async () => (batches.length === 3 ? true : undefined), 10_000, 'both retry batches');
      const [, early, late] = batches;
      assert.deepEqual(
        early!.entries.map(({ id, attempt, notBefore, clock }) => ({ id, attempt, notBefore, clock })),
        [
          { id: 'evt_1:ins_a', attempt: 2, notBefore: retryAt, clock: 'worker-a' },
          { id: 'evt_2:ins_a', attempt: 2, notBefore: retryAt + 400, clock: 'worker-a' },
        ],
      );
      assert.deepEqual(late!.entries.map(({ id, notBefore }) => ({ id, notBefore })), [{ id: 'evt_3:ins_a', notBefore: retryAt + 3000 }], 'started while the first still waits');
      // Retry batches wait in worker slots of their own: first attempts on the shard's task queue, retries on theirs.
      assert.deepEqual(batches.map((batch) => batch.taskQueue), [worker.taskQueue, retryTaskQueue(worker.taskQueue), retryTaskQueue(worker.taskQueue)]);
      // The shard's timer for the first retry was set for 1.5 s ahead of its time, by workflow time (the task's start):
      // not after the time, as a plain timer would, nor earlier.
      const events = (await handle.fetchHistory()).events!;
      const at = (event: (typeof events)[number]) => Number(event.eventTime!.seconds) * 1000 + Math.round(event.eventTime!.nanos! / 1e6);
      const firstDone = events.findIndex((event) => event.activityTaskCompletedEventAttributes);
      const timer = firstDone + events.slice(firstDone).findIndex((event) => event.timerStartedEventAttributes);
      const taskStarted = events.slice(0, timer).reverse().find((event) => event.workflowTaskStartedEventAttributes)!;
      const { seconds, nanos } = events[timer]!.timerStartedEventAttributes!.startToFireTimeout!;
      const firesAt = at(taskStarted) + Number(seconds) * 1000 + Math.round((nanos ?? 0) / 1e6);
      assert.ok(Math.abs(firesAt - (retryAt - 1500)) <= 20, `the timer fires ${retryAt - firesAt} ms ahead of the retry's time`);
      assert.ok(early!.at >= retryAt - 1500, `the first retry batch started ${retryAt - early!.at} ms ahead`);
      releases.shift()!();
      await settled(handle);
    } finally {
      for (const release of releases) release();
      await worker.stop();
    }
  });

  it('does not continue as new with more than the server takes as input: it holds its retries until they fit, instead of being terminated with them', async function () {
    // Every receiver answers "503, Retry-After: 60": what the run took waits there, attempted once.
    const worker = await standIn(async (input) => input.entries.map((entry) => ({ id: entry.id, status: 'pending', statusCode: 503, retryInMs: 60_000, retryAt: Date.now() + 60_000, clock: 'stand-in' })));
    const workflowId = `delivery-shard/carry-${worker.taskQueue}`;
    try {
      // 6,000 entries with eventIds of 200 characters and traces: about 2.3 MB to carry.
      const items = Array.from({ length: 6000 }, (_, i) => ({ id: `${String(i).padStart(200, 'e')}:ins_${i % 20}`, installationId: `ins_${i % 20}`, trace: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` }));
      const input: ShardInput = { shard: 0, epochEndsAt: Date.now() + 120_000, handOversPerRun: 7 };
      const handle = await client.workflow.signalWithStart(deliveryEpochWorkflow, { workflowId, taskQueue: worker.taskQueue, args: [input], signal: handOverSignal, signalArgs: [items.slice(0, 1000)] });
      for (let i = 1; i < 6; i++) await handle.signal(handOverSignal, items.slice(i * 1000, (i + 1) * 1000));
      await waitFor(async () => ((await handle.describe()).raw.pendingActivities?.length === 0 && (await handle.query(backlogQuery)) === 6000 ? true : undefined), 20_000, 'every entry attempted once, waiting for its retry');
      // The seventh hand-over is the run's last: a run that carried by count alone would continue as new now.
      await handle.signal(handOverSignal, [{ id: 'evt_last:ins_0', installationId: 'ins_0' }]);
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const described = await handle.describe();
      assert.equal(described.status.name, 'RUNNING');
      assert.equal(described.runId, handle.signaledRunId, 'the same run, still holding them');
      assert.equal(await handle.query(backlogQuery), 6001);
      await handle.terminate('test over');
    } finally {
      await worker.stop();
    }
  });

  it('hands over to the next run within a second while a batch hangs, and carries that batch over to be attempted after its time', async function () {
    const attempted: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const worker = await standIn(async (input) => {
      attempted.push(...input.entries.map((entry) => entry.id));
      if (input.entries.some((entry) => entry.id.endsWith(':ins_hangs'))) await released;
      return delivered(input);
    });
    const workflowId = `delivery-shard/handover-${worker.taskQueue}`;
    try {
      const input: ShardInput = { shard: 0, handOversPerRun: 2, entries: [{ id: 'evt_1:ins_hangs', installationId: 'ins_hangs', attempt: 1, dueAt: 0 }] };
      /** Before the batch started: its carried time counts from its start, which polling sees late on a loaded machine. */
      const beforeStart = Date.now();
      const handle = await client.workflow.start(deliveryShardWorkflow, { taskQueue: worker.taskQueue, workflowId, args: [input] });
      await waitFor(async () => (attempted.includes('evt_1:ins_hangs') ? true : undefined), 10_000, 'the batch that hangs');
      const hangingSince = Date.now();
      const firstRun = handle.firstExecutionRunId;
      for (const id of ['evt_2:ins_quick', 'evt_3:ins_quick']) await handle.signal(handOverSignal, [{ id, installationId: 'ins_quick' }]);
      // The second hand-over is the run's last: the handover begins while the batch hangs.
      const current = client.workflow.getHandle(workflowId);
      const next = await waitFor(async () => ((await current.describe()).runId !== firstRun ? (await current.describe()).runId : undefined), 10_000, 'the next run');
      assert.ok(Date.now() - hangingSince < 5000, `the handover took ${Date.now() - hangingSince} ms`);
      await waitFor(async () => (attempted.includes('evt_3:ins_quick') ? true : undefined), 10_000, 'the next run to attempt what was queued');
      // Its quick batch's answer takes a trip back to the run after the attempt starts (CI run 70 asked in between and saw 2).
      await waitFor(async () => ((await current.query(backlogQuery)) === 1 ? true : undefined), 10_000, 'the next run to hold only the batch still in flight');
      const started = (await client.workflow.getHandle(workflowId, next).fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!;
      const carried: ShardInput = JSON.parse(Buffer.from(started.input!.payloads![0]!.data!).toString('utf8'));
      const hanging = carried.entries!.find((entry) => entry.id === 'evt_1:ins_hangs')!;
      assert.equal(hanging.attempt, 1);
      assert.ok(hanging.dueAt >= beforeStart + 17_000, 'not before its wait, its attempts and their record are over');
      await current.terminate('test over');
    } finally {
      release();
      await worker.stop();
    }
  });
});
