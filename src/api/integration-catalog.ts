import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { WEBHOOK_INTEGRATION, webhookConfigurations } from '../installations/webhook';
import { type Target } from '../installations/target';
import { integrationQuery, integrationWorkflowId, REGISTRY_WORKFLOW_ID, registryQuery, type IntegrationListing, type IntegrationState, type IntegrationSummary } from '../contracts/integration';
import { isMember, sameSecret, type Caller } from './auth';
import { notFound } from './errors';
import { isIntegrationName } from '../ids';

/** The built-in webhook integration: public, owned by the platform, present from the start (DESIGN.md §3). */
export const webhookIntegration: IntegrationSummary = {
  name: WEBHOOK_INTEGRATION,
  ownerOrg: 'platform',
  visibility: 'public',
  latestVersion: 1,
  title: 'Webhooks',
  description: 'Forward selected events to a URL, signed, with retries.',
  scopes: [],
  configurations: webhookConfigurations,
  updatedAt: new Date(0).toISOString(),
};

export const newInstallLinkToken = (): string => `inl_${randomBytes(18).toString('base64url')}`;

/**
 * Who may see and install what (DESIGN.md §3): private only for the owner's members,
 * unlisted also for whoever presents its install link token, public for everyone.
 */
export class IntegrationCatalog {
  constructor(private readonly client: Client) {}

  /** The integration's state; none for a name no manifest could give, without asking Temporal. */
  async state(name: string): Promise<IntegrationState | undefined> {
    if (!isIntegrationName(name)) return undefined;
    if (name === WEBHOOK_INTEGRATION) return { name, ownerOrg: webhookIntegration.ownerOrg, installLinkToken: '', summary: webhookIntegration };
    return this.client.workflow
      .getHandle(integrationWorkflowId(name))
      .query(integrationQuery)
      .catch((err) => (err instanceof WorkflowNotFoundError ? undefined : Promise.reject(err)));
  }

  /** Listed: public ones and the caller's own organizations' ones. */
  async list(caller: Caller): Promise<IntegrationListing[]> {
    const published = await this.client.workflow.getHandle(REGISTRY_WORKFLOW_ID).query(registryQuery);
    return [webhookIntegration, ...published.filter((summary) => summary.visibility === 'public' || isMember(caller, summary.ownerOrg))];
  }

  /** The integration if the caller may read it; 404 otherwise, so private names do not leak. */
  async readable(caller: Caller, name: string, installLink?: string): Promise<IntegrationState> {
    const state = await this.state(name);
    const summary = state?.summary;
    if (!state || !summary) throw notFound('integration');
    const linked = summary.visibility === 'unlisted' && installLink !== undefined && sameSecret(installLink, state.installLinkToken);
    if (summary.visibility === 'public' || isMember(caller, state.ownerOrg) || linked) return state;
    throw notFound('integration');
  }

  /** Whether an installation into `target` is allowed, given how the caller reached the integration. */
  installable(state: IntegrationState, target: Target, installLink?: string): boolean {
    const visibility = state.summary?.visibility;
    if (visibility === 'public') return true;
    if (target.org === state.ownerOrg) return true;
    return visibility === 'unlisted' && installLink !== undefined && sameSecret(installLink, state.installLinkToken);
  }
}
