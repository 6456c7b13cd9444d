import { randomBytes } from 'node:crypto';
import { INSTALLATION_ID } from '../ids';
import { maskCredentials, OAUTH_CREDENTIALS, type Configuration } from '../installations/configuration';
import { publicEndpoint } from '../installations/urls';
import { checkWebhookPatch, WEBHOOK_INTEGRATION } from '../installations/webhook';
import { type Target } from '../installations/target';
import { refusedTarget } from '../installations/rules';
import { newInstallationId } from '../ids';
import { assertWebhookDestination } from '../webhooks/url-guard';
import { installationWorkflow, newInstallationState } from '../workflows/installation';
import { configureUpdate, deleteUpdate, installationWorkflowId, moveToVersionUpdate, type InstallationView } from '../contracts/installation';
import { changeOf, IntegrationVersions } from '../integrations/versions';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { SigningSecret } from '../installations/types';
import { isMember, requireMember, scopedInstallation, type Caller } from './auth';
import type { ApiDeps } from './deps';
import { badRequest, notFound } from './errors';
import { IntegrationCatalog } from './integration-catalog';

export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** Installations as the API serves them: entity workflows, their read model, who may see what. */
export function installationService(deps: Pick<ApiDeps, 'client' | 'taskQueue' | 'baseUrl' | 'webhookGuard' | 'installations' | 'directory'>) {
  const { client } = deps;
  const catalog = new IntegrationCatalog(client);
  const versions = new IntegrationVersions(client);
  const handle = (id: string) => client.workflow.getHandle(installationWorkflowId(id));
  const withUrls = <T extends { id: string; integration: string }>(installation: T) => ({
    ...installation,
    urls: { publicEndpoint: publicEndpoint(deps.baseUrl, installation.integration, installation.id) },
  });

  /**
   * The installation if the caller may see it, from the read model (its workflow writes it
   * before a change answers: no history is replayed to read it); 404 for missing, deleted
   * and foreign alike. With its signing secrets, which only their own route shows.
   */
  async function loadStored(caller: Caller, id: string): Promise<InstallationView & { signingSecrets: SigningSecret[] }> {
    const stored = INSTALLATION_ID.test(id) ? await deps.installations.get(id) : undefined;
    if (!stored || stored.status === 'deleted') throw notFound('installation');
    // An installation token sees its own installation, and nothing else exists for it.
    const scoped = scopedInstallation(caller);
    if (scoped !== undefined ? scoped !== stored.id : !isMember(caller, stored.target.org)) throw notFound('installation');
    const { id: _id, integration, version, pinned, target, status, pause, configuration, createdAt, updatedAt, signingSecrets } = stored;
    return { id, integration, ...(version !== undefined && { version }), ...(pinned && { pinned }), target, status, ...(pause && { pause }), configuration: maskCredentials(configuration), createdAt, updatedAt, signingSecrets };
  }

  /** The installation as the API shows it, if the caller may see it (see loadStored). */
  async function load(caller: Caller, id: string): Promise<InstallationView> {
    const { signingSecrets: _secrets, ...installation } = await loadStored(caller, id);
    return installation;
  }

  /**
   * The current signing secret, if the caller may see the installation, and until when the
   * one it replaced is still signed with (a rotation's 24 h), if one is.
   */
  async function signingSecret(caller: Caller, id: string): Promise<SigningSecret & { previousExpiresAt?: string }> {
    const [current, ...older] = (await loadStored(caller, id)).signingSecrets;
    const previousExpiresAt = older.flatMap((old) => (old.expiresAt && Date.parse(old.expiresAt) > Date.now() ? [old.expiresAt] : [])).sort().at(-1);
    return { ...current!, ...(previousExpiresAt && { previousExpiresAt }) };
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
    const org = await deps.directory.organization(request.target.org);
    if (!org) throw notFound('organization');
    requireMember(caller, org.id, 'organization');
    const target = { ...request.target, org: org.id };
    const integration = await catalog.state(name);
    // Not installable there answers like a missing integration: private names do not leak.
    if (!integration?.summary || !catalog.installable(integration, target, request.installLink)) throw notFound('integration');
    const refused = refusedTarget(integration.summary.target, target);
    if (refused) throw badRequest(`${integration.name} ${refused}`, [{ field: 'target', message: refused }]);
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

  /**
   * Pins the installation to a published version (`to`, earlier or later), or unpins it
   * back to the latest (`latest`): its workflow moves it, keeping configuration and
   * credentials, as a publish's rollout does.
   */
  async function moveToVersion(caller: Caller, id: string, to: number | 'latest'): Promise<InstallationView> {
    const installation = await load(caller, id);
    const integration = await catalog.state(installation.integration);
    const latest = integration?.summary?.latestVersion;
    if (installation.integration === WEBHOOK_INTEGRATION || latest === undefined) throw badRequest('the webhook integration has no versions', [{ field: 'version', message: 'webhook installations have none' }]);
    const version = to === 'latest' ? latest : to;
    const unpublished = badRequest(`${installation.integration} has no version ${version}`, [{ field: 'version', message: `must be a published version of ${installation.integration}, 1 to ${latest}` }]);
    // A number reserved by a publish that never completed has no version behind it.
    const published = await versions.get(installation.integration, version).catch((err: unknown) => Promise.reject(err instanceof WorkflowNotFoundError ? unpublished : err));
    if (published.dev) {
      // Development code runs only where its owners run it: their own organization's installations.
      if (installation.target.org !== integration!.ownerOrg || !isMember(caller, integration!.ownerOrg)) throw unpublished;
    } else if (version > latest) {
      throw unpublished;
    }
    return handle(id).executeUpdate(moveToVersionUpdate, { args: [changeOf(published), to === 'latest' ? 'unpin' : 'pin'] });
  }

  return { handle, withUrls, load, signingSecret, checkWebhookConfiguration, refuseHandSetCredentials, list, install, moveToVersion };
}
