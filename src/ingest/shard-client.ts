import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { deliveryShardWorkflow, enqueueUpdate, shardOf, shardWorkflowId, type ShardItem } from '../workflows/delivery-shard';

/** How long ingest waits for the engine before answering 503 (with what follows, within 2 s). */
export const ENGINE_DEADLINE_MS = 1500;

/**
 * Hands deliveries to their shard workflow (started on first use), with a deadline: an
 * engine that does not answer in time is unavailable, and the caller says so (503).
 */
export class ShardClient {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    readonly shards: number,
    /** Updates before a shard run hands over; the workflow's default unless set (tests make it small). */
    private readonly updatesPerRun?: number,
  ) {}

  shardOf(eventId: string): number {
    return shardOf(eventId, this.shards);
  }

  async enqueue(shard: number, items: ShardItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.client.withDeadline(Date.now() + ENGINE_DEADLINE_MS, () =>
      this.client.workflow.executeUpdateWithStart(enqueueUpdate, {
        args: [items],
        startWorkflowOperation: new WithStartWorkflowOperation(deliveryShardWorkflow, {
          workflowId: shardWorkflowId(shard),
          taskQueue: this.taskQueue,
          args: [{ shard, ...(this.updatesPerRun && { updatesPerRun: this.updatesPerRun }) }],
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      }),
    );
  }
}
