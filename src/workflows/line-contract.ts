import * as wf from '@temporalio/workflow';

/*
 * What ingest asks of an ordered installation's line (ordered-line.ts): its workflow, and
 * the signal that wakes it when deliveries are recorded for it. Ingest imports this, never
 * the workflow.
 */

export const ORDERED_LINE_WORKFLOW = 'orderedLineWorkflow';
/** The line's workflow type, as ingest starts it by name. */
export type OrderedLineWorkflow = (installationId: string) => Promise<void>;
export const lineWorkflowId = (installationId: string): string => `ordered-line/${installationId}`;
/** Deliveries were recorded for the installation: its line drains what is pending, in order. */
export const wakeLineSignal = wf.defineSignal('wake');
