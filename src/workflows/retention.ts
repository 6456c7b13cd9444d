import * as wf from '@temporalio/workflow';
import type { createActivities } from '../activities';

export const RETENTION_WORKFLOW_ID = 'delivery-log-retention';

const { purgeDeliveries } = wf.proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '10 minutes' },
});

/**
 * Keeps the delivery log within PLATFORM_DELIVERY_RETENTION_DAYS: a purge every hour, as a
 * workflow so that every run is visible in the Temporal UI. One per namespace.
 */
export async function retentionWorkflow(): Promise<void> {
  for (let run = 0; run < 24; run++) {
    await purgeDeliveries();
    await wf.sleep('1 hour');
  }
  await wf.continueAsNew<typeof retentionWorkflow>();
}
