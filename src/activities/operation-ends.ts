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

/**
 * Operations recorded running whose workflow has ended without finishing them (terminated
 * from the Temporal UI, timed out, failed, or cancelled there rather than through the API):
 * recorded `failed` (`cancelled` for a cancellation), so that the API and the CLI say what
 * became of them, and the held sweep, which passes by an installation while a release of
 * it runs, takes it again (an ordered line waits behind what such a release held).
 */
export function createOperationEnds(deps: { operations: OperationRecords; client: Client; logger: Logger }) {
  return async function recordEndedOperations(now = Date.now()): Promise<void> {
    for (const operation of await deps.operations.running(PER_SWEEP)) {
      let ended: string | undefined;
      try {
        const { status } = await deps.client.workflow.getHandle(operationWorkflowId(operation.id)).describe();
        if (status.name !== 'RUNNING') ended = status.name;
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        if (now - operation.createdAt > UNSTARTED_AFTER_MS) ended = 'NOT_FOUND';
      }
      // Finished meanwhile (its own last step), it is no longer running, and stays as it recorded itself.
      if (ended && (await deps.operations.finish(operation.id, ended === 'CANCELLED' ? 'cancelled' : 'failed'))) {
        deps.logger.warn({ operation: operation.id, kind: operation.kind, installationId: operation.installationId, workflow: ended }, 'operation recorded ended: its workflow ended without finishing it');
      }
    }
  };
}
