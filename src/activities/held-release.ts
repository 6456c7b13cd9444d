import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { operationWorkflowId } from '../contracts/operation';
import type { LogSweeps } from '../delivery-log/log-sweeps';
import type { PendingDelivery } from '../delivery-log/rows';
import type { OperationRequest } from '../delivery-log/types';
import type { Logger } from '../logger';

type Held = Awaited<ReturnType<LogSweeps['heldOfActive']>>[number];

/** Installations whose receivers answer again, looked at in one read at most (an attempt batch's are fewer). */
const RECOVERED_AT_ONCE = 1000;

/**
 * A release started as its receiver recovers takes what is held up to this long after:
 * ingest reads receivers' states once a second and a flush commits within its request's
 * 1.8 s deadline, so events go on being held a moment after the state clears (the
 * release's late look, 5 s on, takes them).
 */
const HELD_AFTER_RECOVERY_MS = 5000;

/**
 * What becomes of deliveries held for installations that are not paused (see
 * LogSweeps.heldOfActive): a receiver that answers again gets a release of what was held,
 * a background operation as a resume's (in order of ingest, paced, in the API and the
 * Temporal UI), started on `taskQueue` (the platform's, where the operation workflow runs).
 */
export function createHeldRelease(deps: { sweeps: LogSweeps; client: Client; logger: Logger; taskQueue: string }) {
  async function startRelease(held: Held, heldUntil: number, why: string): Promise<void> {
    // Its id is its installation's and its oldest held delivery's: started again while it runs (a sweep run again, a batch and a sweep), it runs once.
    const release: OperationRequest = { id: `op_release_${held.installationId}_held${held.oldest}`, kind: 'release_held', organizationId: held.organizationId, installationId: held.installationId, held: 'deliver', heldUntil };
    await deps.client.workflow.start('operationWorkflow', { workflowId: operationWorkflowId(release.id), taskQueue: deps.taskQueue, args: [release] }).then(
      () => deps.logger.info({ installationId: held.installationId, operation: release.id }, why),
      (err: unknown) => {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      },
    );
  }

  return {
    /**
     * The stranded sweep's part, once a minute: installations with deliveries held since
     * before `before`. One still failing has its oldest held delivery tried, and its answer
     * decides (one a sweep); one answering (a release missed) gets its release. Answers
     * those tries, for the caller to hand over.
     */
    async sweep(before: number, limit: number): Promise<PendingDelivery[]> {
      const tries: PendingDelivery[] = [];
      for (const held of await deps.sweeps.heldOfActive(before, limit)) {
        if (!held.failing) {
          await startRelease(held, Date.now(), 'held deliveries of an installation not paused released: its receiver answers');
          continue;
        }
        const oldest = await deps.sweeps.releaseOldestHeld(held.installationId);
        if (oldest) tries.push(oldest);
      }
      return tries;
    },

    /** Installations whose receivers an attempt batch saw answer again after failing: what they hold is released at once. */
    async recovered(installationIds: string[]): Promise<void> {
      for (const held of await deps.sweeps.heldOfActive(Date.now() + 1, RECOVERED_AT_ONCE, installationIds)) {
        if (!held.failing) await startRelease(held, Date.now() + HELD_AFTER_RECOVERY_MS, 'held deliveries released at once: their receiver answers again');
      }
    },
  };
}
