import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { operationWorkflowId } from '../contracts/operation';
import type { LogSweeps } from '../delivery-log/log-sweeps';
import type { PendingDelivery } from '../delivery-log/rows';
import type { OperationRequest } from '../delivery-log/types';
import type { Logger } from '../logger';

/**
 * What becomes of deliveries held for installations that are not paused (see
 * LogSweeps.heldOfActive), once a sweep: a receiver that answers again gets a release of
 * what was held, a background operation as a resume's (in order of ingest, paced, in the
 * API and the Temporal UI); one still failing has its oldest held delivery tried, and its
 * answer decides (one a sweep: a minute). Answers those tries, for the caller to hand over.
 */
export function createHeldRelease(deps: { sweeps: LogSweeps; client: Client; logger: Logger }) {
  return async function releaseHeld(before: number, limit: number, taskQueue: string): Promise<PendingDelivery[]> {
    const tries: PendingDelivery[] = [];
    for (const held of await deps.sweeps.heldOfActive(before, limit)) {
      if (held.failing) {
        const oldest = await deps.sweeps.releaseOldestHeld(held.installationId);
        if (oldest) tries.push(oldest);
        continue;
      }
      // Its id is its installation's and its oldest held delivery's: a sweep run again starts it once.
      const release: OperationRequest = { id: `op_release_${held.installationId}_held${held.oldest}`, kind: 'release_held', organizationId: held.organizationId, installationId: held.installationId, held: 'deliver', heldUntil: Date.now() };
      await deps.client.workflow.start('operationWorkflow', { workflowId: operationWorkflowId(release.id), taskQueue, args: [release] }).then(
        () => deps.logger.info({ installationId: held.installationId, operation: release.id }, 'held deliveries of an installation not paused released: its receiver answers'),
        (err: unknown) => {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        },
      );
    }
    return tries;
  };
}
