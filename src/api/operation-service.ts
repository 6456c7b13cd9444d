import type { Client } from '@temporalio/client';
import { randomBytes } from 'node:crypto';
import { cancelOperationSignal, operationWorkflowId } from '../contracts/operation';
import type { Operation, OperationRequest } from '../delivery-log/types';
import type { OperationRecords } from '../delivery-log/operation-records';
import { isMember, type Caller } from './auth';
import { notFound } from './errors';
import { operationWorkflow } from '../workflows/operation';

export const OPERATION_ID = /^op_[A-Za-z0-9_-]{1,120}$/;

/** Background operations as the API serves them: started as workflows, read from the log, cancelled by a signal. */
export class OperationService {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly records: OperationRecords,
  ) {}

  /** What a bulk replay would replay now: its failed events (once per event) in the range. */
  countFailed(request: Pick<OperationRequest, 'installationId' | 'since' | 'until'>): Promise<number> {
    return this.records.countFailedEvents(request.installationId, request.since, request.until);
  }

  /**
   * Starts a bulk replay: counts what it will replay (once per event) and records it, so
   * the caller reads it at once, then starts its workflow; answers its id and that count.
   */
  async replayFailed(request: Omit<OperationRequest, 'id' | 'kind'>): Promise<{ id: string; total: number }> {
    const operation: OperationRequest = { ...request, id: `op_${randomBytes(12).toString('base64url')}`, kind: 'replay_failed' };
    const total = await this.countFailed(request);
    await this.records.begin(operation, total);
    await this.client.workflow.start(operationWorkflow, { workflowId: operationWorkflowId(operation.id), taskQueue: this.taskQueue, args: [operation] }).catch(async (err: unknown) => {
      // Not started: nothing will run it.
      await this.records.finish(operation.id, 'cancelled');
      throw err;
    });
    return { id: operation.id, total };
  }

  /** The operation if the caller may see it (its installation's organization); 404 otherwise, and while it has not begun. */
  async get(caller: Caller, id: string): Promise<Operation> {
    const found = OPERATION_ID.test(id) ? await this.records.get(id) : undefined;
    if (!found || !isMember(caller, found.organizationId)) throw notFound('operation');
    const { organizationId: _org, ...operation } = found;
    return operation;
  }

  /** Stops it between two pages; what it did stays done. */
  async cancel(caller: Caller, id: string): Promise<Operation> {
    const operation = await this.get(caller, id);
    if (operation.status === 'running') await this.client.workflow.getHandle(operationWorkflowId(id)).signal(cancelOperationSignal);
    return operation;
  }
}
