import * as wf from '@temporalio/workflow';

/*
 * What the API asks of a background operation's workflow (operation.ts): its id and its
 * cancellation. What an operation is: delivery-log/types.ts.
 */

/** The operation's workflow id is its id: the API finds it without a lookup. */
export const operationWorkflowId = (id: string): string => id;
/** Stops an operation between two pages: what it did stays done. */
export const cancelOperationSignal = wf.defineSignal('cancel');
