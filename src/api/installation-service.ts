import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/common';
import { INSTALLATION_ID } from '../ids';
import { OAUTH_CREDENTIALS, type Configuration } from '../integrations/configuration';
import { publicEndpoint } from '../integrations/environment';
import { checkWebhookPatch, WEBHOOK_INTEGRATION, type Target } from '../integrations/webhook';
import { newInstallationId } from '../ids';
import { assertWebhookDestination } from '../webhooks/url-guard';
import { DIRECTORY_WORKFLOW_ID, orgQuery } from '../workflows/directory';
import { configureUpdate, deleteUpdate, installationQuery, installationWorkflow, installationWorkflowId, newInstallationState, type InstallationView } from '../workflows/installation';
import { isMember, requireMember, type Caller } from './auth';
import type { ApiDeps } from './deps';
import { badRequest, notFound } from './errors';
import { IntegrationCatalog } from './integration-catalog';

export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** Installations as the API serves them: entity workflows, their read model, who may see what. */
export function installationService(deps: Pick<ApiDeps, 'client' | 'taskQueue' | 'baseUrl' | 'webhookGuard' | 'installations'>) {
  const { client } = deps;
  const catalog = new IntegrationCatalog(client);
  const handle = (id: string) => client.workflow.getHandle(installationWorkflowId(id));
  const withUrls = <T extends { id: string; integration: string }>(installation: T) => ({
    ...installation,
    urls: { publicEndpoint: publicEndpoint(deps.baseUrl, installation.integration, installation.id) },
  });

  /** The installation if the caller may see it; 404 for missing, deleted and foreign alike. */
  async function load(caller: Caller, id: string): Promise<InstallationView> {
    if (!INSTALLATION_ID.test(id)) throw notFound('installation');
    const installation = await handle(id)
      .query(installationQuery)
      .catch((err) => Promise.reject(err instanceof WorkflowNotFoundError ? notFound('installation') : err));
    if (installation.status === 'deleted') throw notFound('installation');
    // An installation token sees its own installation, and nothing else exists for it.
    if (caller.kind === 'installation' ? caller.installationId !== installation.id : !isMember(caller, installation.target.org)) throw notFound('installation');
    return installation;
  }

  /**
   * Every refused property at once, then the destination: a webhook URL must not resolve
   * to a non-public address (DESIGN.md §3). The workflow's update validator repeats the
   * first part, so no path around the API can store what is refused here.
   */
  async function checkWebhookConfiguration(target: Target, configuration: Configuration): Promise<void> {
    const issues = checkWebhookPatch(target, configuration).map((issue) => ({ ...issue, field: `configuration.${issue.field}` }));
    if (issues.length) throw badRequest(`invalid configuration: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`, issues);
    if (typeof configuration.webhook_url !== 'string') return;
    try {
      await assertWebhookDestination(configuration.webhook_url, deps.webhookGuard);
    } catch (err) {
      throw badRequest(`configuration.webhook_url ${(err as Error).message}`, [{ field: 'configuration.webhook_url', message: (err as Error).message }]);
    }
  }

  /** `oauth_credentials` comes from the integration's OAuth flow (its installation's token), never from a member's hand: installing or editing. */
  function refuseHandSetCredentials(caller: Caller, configuration: Configuration): void {
    if (caller.kind === 'installation' || !Object.prototype.hasOwnProperty.call(configuration, OAUTH_CREDENTIALS)) return;
    throw badRequest(`${OAUTH_CREDENTIALS} is set by the integration's OAuth flow, not by hand`, [{ field: `configuration.${OAUTH_CREDENTIALS}`, message: 'is set by the integration' }]);
  }

  function list(caller: Caller, orgs: string[]) {
    return deps.installations.list(orgs.filter((org) => isMember(caller, org)));
  }

  /** An installation of the integration's latest version; 404 where it may not be installed. */
  async function install(caller: Caller, name: string, request: { target: Target; configuration?: Configuration; installLink?: string }): Promise<InstallationView> {
    if (request.target.space && request.target.site) throw badRequest('target names a space or a site, not both', [{ field: 'target', message: 'has both space and site' }]);
    // The organization by id or subdomain, as in manifests; stored by id.
    const org = await client.workflow.getHandle(DIRECTORY_WORKFLOW_ID).query(orgQuery, request.target.org);
    if (!org) throw notFound('organization');
    requireMember(caller, org.id, 'organization');
    const target = { ...request.target, org: org.id };
    const integration = await catalog.state(name);
    // Not installable there answers like a missing integration: private names do not leak.
    if (!integration?.summary || !catalog.installable(integration, target, request.installLink)) throw notFound('integration');
    const configuration = request.configuration ?? {};
    refuseHandSetCredentials(caller, configuration);
    if (integration.name === WEBHOOK_INTEGRATION) await checkWebhookConfiguration(target, configuration);
    const id = newInstallationId();
    const state = newInstallationState(
      {
        id,
        integration: integration.name,
        version: integration.summary.latestVersion,
        configurations: integration.name === WEBHOOK_INTEGRATION ? undefined : integration.summary.configurations,
        target,
        signingSecret: newSigningSecret(),
        scopes: integration.summary.scopes,
        eventTypes: integration.summary.eventTypes ?? [],
      },
      new Date().toISOString(),
    );
    const workflow = await client.workflow.start(installationWorkflow, { workflowId: installationWorkflowId(id), taskQueue: deps.taskQueue, args: [state] });
    // The update validates the configuration, and answers once the read model holds the installation.
    return workflow.executeUpdate(configureUpdate, { args: [configuration, { byIntegration: false }] }).catch(async (err) => {
      await workflow.executeUpdate(deleteUpdate);
      throw err;
    });
  }

  return { handle, withUrls, load, checkWebhookConfiguration, refuseHandSetCredentials, list, install };
}
