import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { operationWorkflowId } from '../contracts/operation';
import type { OperationRecords } from '../delivery-log/operation-records';
import type { Logger } from '../logger';

/** Running operations a sweep looks at, at most (a handful run at once). */
const PER_SWEEP = 100;
/**
 * A bulk replay is recorded just before its workflow starts (its caller reads it at once):
 * one whose workflow is not found is taken for ended only this long after it began.
 */
const UNSTARTED_AFTER_MS = 60_000;
/** The sweep's share of its minute: what is left is looked at on the next pass, and its stranded deliveries are not held up. */
const LOOKING_MS = 15_000;
/** What Temporal says of a workflow that will not finish its operation. */
const ENDED = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TERMINATED', 'TIMED_OUT']);

/**
 * Operations recorded running whose workflow has ended without finishing them (terminated
 * from the Temporal UI, timed out, failed, or cancelled there rather than through the API):
 * recorded `failed` (`cancelled` for a cancellation), so that the API and the CLI say what
 * became of them, and the held sweep, which passes by an installation while a release of
 * it runs, takes it again (an ordered line waits behind what such a release held). An
 * operation Temporal does not answer for is looked at again on the next pass.
 */
export function createOperationEnds(deps: { operations: OperationRecords; client: Client; logger: Logger }) {
  return async function recordEndedOperations(now = Date.now()): Promise<void> {
    const deadline = now + LOOKING_MS;
    let unanswered = 0;
    for (const operation of await deps.operations.running(PER_SWEEP)) {
      if (Date.now() >= deadline) break;
      let ended: string | undefined;
      try {
        const { status } = await deps.client.connection.withDeadline(deadline, () => deps.client.workflow.getHandle(operationWorkflowId(operation.id)).describe());
        if (ENDED.has(status.name)) ended = status.name;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) ended = now - operation.createdAt > UNSTARTED_AFTER_MS ? 'NOT_FOUND' : undefined;
        else unanswered += 1;
      }
      // Only the record it read: finished meanwhile (its own last step), or begun again under its id, it stays as it is.
      if (ended && (await deps.operations.finish(operation.id, ended === 'CANCELLED' ? 'cancelled' : 'failed', Date.now(), operation.createdAt))) {
        deps.logger.warn({ operation: operation.id, kind: operation.kind, installationId: operation.installationId, workflow: ended }, 'operation recorded ended: its workflow ended without finishing it');
      }
    }
    if (unanswered) deps.logger.warn({ unanswered }, 'operations running not checked against their workflows (Temporal did not answer); the next pass looks again');
  };
}
