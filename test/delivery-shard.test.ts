import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { AttemptBatchInput, AttemptBatchResult } from '../src/activities/attempt-batch';
import { deliveryShardWorkflow, type ShardEntry } from '../src/workflows/delivery-shard';
import { namespaceFor } from './support/namespaces';
import { waitFor } from './support/platform';
import { testSettings } from './support/settings';

/**
 * The shard workflow on the run's dev server, its activities stood in for: what it asks of
 * the server, whatever the receivers do (their behaviour is tested through the platform).
 */
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

  it('keeps at most 500 attempt batches in flight (the server fails a task past 2,000 pending activities), and every installation has its turn', async function () {
    const taskQueue = `shard-cap-${Date.now()}`;
    const attempted = new Set<string>();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const worker = await Worker.create({
      connection: await NativeConnection.connect({ address: testSettings().address }),
      namespace,
      taskQueue,
      workflowBundle: { code: readFileSync(testSettings().bundle, 'utf8') },
      maxConcurrentActivityTaskExecutions: 1000,
      activities: {
        async attemptDeliveries(input: AttemptBatchInput): Promise<AttemptBatchResult[]> {
          await released;
          for (const entry of input.entries) attempted.add(entry.id);
          return input.entries.map((entry) => ({ id: entry.id, status: 'delivered' }));
        },
        async failDeliveries(): Promise<void> {},
      },
    });
    const running = worker.run();
    try {
      // 600 installations with a delivery each: one batch each, were there no cap.
      const entries: ShardEntry[] = Array.from({ length: 600 }, (_, i) => ({ id: `evt_cap:ins_${i}`, installationId: `ins_${i}`, attempt: 1, dueAt: 0 }));
      const handle = await client.workflow.start(deliveryShardWorkflow, { taskQueue, workflowId: `delivery-shard/cap-${taskQueue}`, args: [{ shard: 0, entries }] });
      const pending = async () => (await handle.describe()).raw.pendingActivities?.length ?? 0;
      await waitFor(async () => ((await pending()) > 0 ? true : undefined), 10_000, 'batches to be scheduled');
      assert.equal(await pending(), 500);
      release();
      await waitFor(async () => (attempted.size === 600 ? true : undefined), 20_000, 'every installation to be attempted');
      await waitFor(async () => ((await pending()) === 0 ? true : undefined), 10_000, 'no batch left in flight');
      await handle.terminate('test over');
    } finally {
      release();
      worker.shutdown();
      await running;
    }
  });
});
