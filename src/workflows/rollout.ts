import * as wf from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { VersionChange } from '../contracts/installation';

const { moveInstallationsToVersion } = wf.proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export interface Rollout {
  integration: string;
  change: VersionChange;
  /** The last installation id moved: where the next page starts. */
  after?: string;
  moved?: number;
}

export const rolloutWorkflowId = (integration: string, version: number): string => `integration/${integration}/rollout/v${version}`;

/** Pages a run takes before it continues as new. */
const PAGES_PER_RUN = 50;

/**
 * A publish's rollout: each installation of the integration that is not pinned moves to
 * the new version, a page of them at a time, as a workflow so that a crash resumes where
 * it was and every rollout shows in the Temporal UI. Moves are idempotent (an installation
 * already there, or on a newer one, stays), so a page retried moves nothing twice.
 * Answers how many installations moved.
 */
export async function rolloutWorkflow(rollout: Rollout): Promise<number> {
  let { after, moved = 0 } = rollout;
  for (let page = 0; page < PAGES_PER_RUN; page++) {
    const done = await moveInstallationsToVersion(rollout.integration, rollout.change, after);
    moved += done.moved;
    if (done.next === undefined) return moved;
    after = done.next;
  }
  return wf.continueAsNew<typeof rolloutWorkflow>({ ...rollout, after, moved });
}
