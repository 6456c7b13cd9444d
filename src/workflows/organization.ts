import * as wf from '@temporalio/workflow';
import type { Target } from '../integrations/webhook';
import { HistoryBudget } from './continue-as-new';

export type InstallationStatus = 'pending' | 'active' | 'paused' | 'deleted';

/** What event fan-out and installation listings need of each installation. */
export interface InstallationSummary {
  id: string;
  integration: string;
  target: Target;
  status: InstallationStatus;
  /** Event types the installation selected. */
  events: string[];
  url?: string;
  createdAt: string;
  /** Increases with every change; the index keeps the newest it has seen. */
  revision: number;
}

export interface OrganizationInput {
  orgId: string;
  installations?: Record<string, InstallationSummary>;
}

export const organizationWorkflowId = (orgId: string): string => `org/${orgId}`;

export const installationChangedSignal = wf.defineSignal<[InstallationSummary]>('installationChanged');
export const installationsQuery = wf.defineQuery<InstallationSummary[]>('installations');

/**
 * The organization's index of installations: one strongly consistent query answers the
 * fan-out of an event and the listing of installations, with no visibility lag.
 */
export async function organizationWorkflow(input: OrganizationInput, historyLimit = 2000): Promise<void> {
  const installations = input.installations ?? {};
  const budget = new HistoryBudget(historyLimit);

  wf.setHandler(installationChangedSignal, (summary) => {
    budget.spend();
    const known = installations[summary.id];
    // Deleted ones stay as tombstones, across runs too, so a late signal cannot revive them.
    if (!known || known.revision < summary.revision) installations[summary.id] = summary;
  });
  const live = () => Object.values(installations).filter((summary) => summary.status !== 'deleted');
  wf.setHandler(installationsQuery, live);

  await wf.condition(() => budget.exhausted());
  await budget.drained();
  await wf.continueAsNew<typeof organizationWorkflow>({ orgId: input.orgId, installations }, historyLimit);
}
