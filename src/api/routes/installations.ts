import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/common';
import { OAUTH_CREDENTIALS, type Configuration } from '../../integrations/configuration';
import { checkWebhookPatch, WEBHOOK_INTEGRATION, type Target } from '../../integrations/webhook';
import { newInstallationId } from '../../ids';
import {
  configureUpdate,
  deleteUpdate,
  installationQuery,
  installationWorkflow,
  installationWorkflowId,
  newInstallationState,
  pauseUpdate,
  resumeUpdate,
  rotateSecretUpdate,
  signingSecretQuery,
  type InstallationView,
} from '../../workflows/installation';
import { DIRECTORY_WORKFLOW_ID, orgQuery } from '../../workflows/directory';
import { assertWebhookDestination } from '../../webhooks/url-guard';
import { isMember, requireMember, type Caller } from '../auth';
import type { ApiDeps } from '../deps';
import { badRequest, notFound } from '../errors';
import type { RouteTable } from '../route-table';
import { IntegrationCatalog } from '../integration-catalog';
import { createInstallationSchema, installationSchema, listOf, secretSchema } from '../schemas';

const INSTALLATION_ID = /^ins_[A-Za-z0-9_-]{1,64}$/;

export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export function installationApi(deps: ApiDeps) {
  const { client } = deps;
  const handle = (id: string) => client.workflow.getHandle(installationWorkflowId(id));
  const withUrls = <T extends { id: string; integration: string }>(installation: T) => ({
    ...installation,
    urls: { publicEndpoint: `${deps.baseUrl}/v1/integrations/${installation.integration}/installations/${installation.id}/public` },
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

  function list(caller: Caller, orgs: string[]) {
    return deps.installations.list(orgs.filter((org) => isMember(caller, org)));
  }

  return { handle, withUrls, load, checkWebhookConfiguration, list };
}

export function installationRoutes(routes: RouteTable, deps: ApiDeps): void {
  const api = installationApi(deps);
  const catalog = new IntegrationCatalog(deps.client);
  const { client } = deps;

  routes.add<{ target: Target; configuration?: Configuration; installLink?: string }>(
    {
      method: 'post',
      path: '/v1/integrations/:name/installations',
      summary: 'Install an integration into an organization, a space or a site',
      access: 'member',
      body: createInstallationSchema,
      responses: { 201: { description: 'The installation', schema: installationSchema }, 400: { description: 'Invalid target or configuration' }, 404: { description: 'No such integration or organization, or not installable there' } },
    },
    async ({ caller, body, params }) => {
      if (body.target.space && body.target.site) throw badRequest('target names a space or a site, not both', [{ field: 'target', message: 'has both space and site' }]);
      // The organization by id or subdomain, as in manifests; stored by id.
      const org = await client.workflow.getHandle(DIRECTORY_WORKFLOW_ID).query(orgQuery, body.target.org);
      if (!org) throw notFound('organization');
      requireMember(caller, org.id, 'organization');
      const target = { ...body.target, org: org.id };
      const integration = await catalog.state(params.name!);
      // Not installable there answers like a missing integration: private names do not leak.
      if (!integration?.summary || !catalog.installable(integration, target, body.installLink)) throw notFound('integration');
      const configuration = body.configuration ?? {};
      if (integration.name === WEBHOOK_INTEGRATION) await api.checkWebhookConfiguration(target, configuration);
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
      const installation = await workflow.executeUpdate(configureUpdate, { args: [configuration] }).catch(async (err) => {
        await workflow.executeUpdate(deleteUpdate);
        throw err;
      });
      return { status: 201, body: api.withUrls(installation) };
    },
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/installations',
      summary: 'List the installations the caller may see',
      access: 'member',
      query: { integration: 'Integration name', org: 'Organization id', space: 'Space id', site: 'Site id', status: 'pending, active or paused' },
      responses: { 200: { description: 'Installations', schema: listOf(installationSchema) } },
    },
    async ({ caller, query }) => {
      if (caller.kind === 'admin' && !query.org) throw badRequest('the administrator lists one organization at a time: give org', [{ field: 'org', message: 'is required' }]);
      const orgs = query.org ? [query.org] : caller.kind === 'member' ? caller.orgs : [];
      const items = (await api.list(caller, orgs)).filter(
        (item) =>
          (!query.integration || item.integration === query.integration) &&
          (!query.space || item.target.space === query.space) &&
          (!query.site || item.target.site === query.site) &&
          (!query.status || item.status === query.status),
      );
      return { status: 200, body: { items: items.map(({ revision: _revision, ...item }) => api.withUrls(item)) } };
    },
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/installations/:id',
      summary: 'Read an installation (its own, with an installation token)',
      access: 'member',
      installation: true,
      responses: { 200: { description: 'The installation', schema: installationSchema }, 404: { description: 'Not found' } },
    },
    async ({ caller, params }) => ({ status: 200, body: api.withUrls(await api.load(caller, params.id!)) }),
  );

  routes.add<Configuration>(
    {
      method: 'patch',
      path: '/v1/installations/:id/configuration',
      summary: 'Merge properties into the configuration (null unsets one); validated before it applies. `oauth_credentials` only with the installation token',
      access: 'member',
      installation: true,
      body: { type: 'object' },
      responses: { 200: { description: 'The installation', schema: installationSchema }, 400: { description: 'A property is refused' } },
    },
    async ({ caller, params, body }) => {
      const { target, integration } = await api.load(caller, params.id!);
      if (caller.kind !== 'installation' && Object.prototype.hasOwnProperty.call(body, OAUTH_CREDENTIALS)) {
        throw badRequest(`${OAUTH_CREDENTIALS} is set by the integration's OAuth flow, not by hand`, [{ field: `configuration.${OAUTH_CREDENTIALS}`, message: 'is set by the integration' }]);
      }
      // Webhook URLs need DNS, which workflows cannot do; every other check is the update's.
      if (integration === WEBHOOK_INTEGRATION) await api.checkWebhookConfiguration(target, body);
      const installation = await api.handle(params.id!).executeUpdate(configureUpdate, { args: [body] });
      // A DELETE that raced this edit won: the installation is gone.
      if (installation.status === 'deleted') throw notFound('installation');
      return { status: 200, body: api.withUrls(installation) };
    },
  );

  for (const [action, update, summary] of [
    ['pause', pauseUpdate, 'Pause: events are recorded as skipped until resumed'],
    ['resume', resumeUpdate, 'Resume a paused installation'],
  ] as const) {
    routes.add(
      { method: 'post', path: `/v1/installations/:id/${action}`, summary, access: 'member', responses: { 200: { description: 'The installation', schema: installationSchema } } },
      async ({ caller, params }) => {
        await api.load(caller, params.id!);
        return { status: 200, body: api.withUrls(await api.handle(params.id!).executeUpdate(update)) };
      },
    );
  }

  routes.add(
    { method: 'delete', path: '/v1/installations/:id', summary: 'Delete an installation', access: 'member', responses: { 204: { description: 'Deleted' } } },
    async ({ caller, params }) => {
      await api.load(caller, params.id!);
      await api.handle(params.id!).executeUpdate(deleteUpdate);
      return { status: 204 };
    },
  );

  routes.add(
    { method: 'get', path: '/v1/installations/:id/signing-secret', summary: 'Read the signing secret', access: 'member', responses: { 200: { description: 'The current secret', schema: secretSchema } } },
    async ({ caller, params }) => {
      await api.load(caller, params.id!);
      const { secret, createdAt } = await api.handle(params.id!).query(signingSecretQuery);
      return { status: 200, body: { secret, createdAt } };
    },
  );

  routes.add(
    {
      method: 'post',
      path: '/v1/installations/:id/signing-secret/rotate',
      summary: 'Rotate the signing secret; the old one stays valid for 24 h and is signed with meanwhile',
      access: 'member',
      responses: { 200: { description: 'The new secret', schema: secretSchema } },
    },
    async ({ caller, params }) => {
      await api.load(caller, params.id!);
      const { secret, createdAt } = await api.handle(params.id!).executeUpdate(rotateSecretUpdate, { args: [newSigningSecret()] });
      return { status: 200, body: { secret, createdAt } };
    },
  );
}
