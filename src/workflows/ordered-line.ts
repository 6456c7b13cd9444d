import * as wf from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { wakeLineSignal } from './line-contract';

/**
 * The line drains in one activity while deliveries keep coming (each attempt a step of it,
 * heartbeating): a worker that dies is found out within the heartbeat timeout, and the
 * next run of the activity goes on from the oldest delivery still pending.
 */
const { drainLine } = wf.proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '1 day',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
});

/** Drains a run takes before it continues as new (some 8 history events each). */
const DRAINS_PER_RUN = 200;

/**
 * An installation with `ordered: true`: its deliveries are attempted one at a time in the
 * order they were recorded, each to its end (delivered, or failed with its retries spent)
 * before the next (see drainLine). Ingest wakes it (signal-with-start) when it records
 * deliveries for it; the delivery log holds the line, so a crash loses no place in it.
 */
export async function orderedLineWorkflow(installationId: string): Promise<void> {
  let woken = true;
  wf.setHandler(wakeLineSignal, () => void (woken = true));
  for (let drains = 0; drains < DRAINS_PER_RUN; drains++) {
    await wf.condition(() => woken);
    woken = false;
    if ((await drainLine(installationId)) === 'gone') return;
  }
  await wf.condition(wf.allHandlersFinished);
  // Woken or not meanwhile, the next run drains once first: a wake is never lost across runs.
  return wf.continueAsNew<typeof orderedLineWorkflow>(installationId);
}
