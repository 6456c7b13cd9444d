import * as wf from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { PageCursor } from '../delivery-log/types';

export const STRANDED_WORKFLOW_ID = 'stranded-deliveries';

const { resumeStranded } = wf.proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '10 seconds', maximumInterval: '1 minute' },
});

/** Sweeps an hour per run: history stays bounded. */
const SWEEPS_PER_RUN = 60;

/**
 * Once a minute, hands to their shards again up to 1,000 deliveries recorded but never
 * attempted a minute on, oldest first, going on from where the last sweep stopped (those a
 * shard did not take are reached on the next pass from the start): an
 * ingest that answered 503 (its hand-over not known to have landed) and was never retried
 * would otherwise stay pending for good. So would the retries of a shard run that ended
 * without them (terminated): those still pending 15 minutes on go too. A shard skips what
 * it holds, so a delivery merely waiting in a backlog is not attempted twice. One per
 * namespace.
 */
export async function strandedDeliveriesWorkflow(from?: PageCursor): Promise<void> {
  // Where the last sweep stopped, also across runs: deliveries still held by a backlog do not hide later ones.
  let after = from;
  for (let sweep = 0; sweep < SWEEPS_PER_RUN; sweep++) {
    ({ next: after } = await resumeStranded(after));
    await wf.sleep('1 minute');
  }
  await wf.continueAsNew<typeof strandedDeliveriesWorkflow>(after);
}
