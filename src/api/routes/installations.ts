import type { Configuration } from '../../installations/configuration';
import { WEBHOOK_INTEGRATION } from '../../installations/webhook';
import { type Target } from '../../installations/target';
import { configureUpdate, deleteUpdate, pauseUpdate, resumeUpdate, rotateSecretUpdate, type ResumeRequest } from '../../contracts/installation';
import type { ApiDeps } from '../deps';
import { badRequest, notFound } from '../errors';
import { installationService, newSigningSecret } from '../installation-service';
import type { RouteTable } from '../route-table';
import { PORTAL_LINK_DEFAULT_S, PORTAL_LINK_MAX_S } from '../portal-links';
import { parse } from '../validation';
import { installationPauses } from '../../metrics';
import { createInstallationSchema, healthSchema, installationSchema, listOf, secretSchema } from '../schemas';

/**
 * A configuration is settings (and an integration's OAuth credentials), not storage: each
 * revision is kept in Temporal's history and sent in installation_setup, and 900 KB ones
 * written in a loop grew the data directory by 2.6 MB a round.
 */
const CONFIGURATION_LIMIT = '64kb';

const resumeSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { held: { enum: ['deliver', 'drop'], description: 'What becomes of the events held while the platform paused it' }, replayFailed: { type: 'boolean', description: 'Also replay the deliveries that failed since the trouble began (once per event)' } },
};

export function installationRoutes(routes: RouteTable, deps: ApiDeps): void {
  const api = installationService(deps);

  routes.add<{ target: Target; configuration?: Configuration; installLink?: string }>(
    {
      method: 'post',
      path: '/v1/integrations/:name/installations',
      summary: 'Install an integration into an organization, a space or a site',
      access: 'member',
      body: createInstallationSchema,
      bodyLimit: CONFIGURATION_LIMIT,
      responses: { 201: { description: 'The installation', schema: installationSchema }, 400: { description: 'Invalid target or configuration' }, 404: { description: 'No such integration or organization, or not installable there' } },
    },
    async ({ caller, body, params }) => ({ status: 201, body: api.withUrls(await api.install(caller, params.name!, body)) }),
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
      summary: 'Read an installation (its own, with an installation token or a portal link)',
      access: 'member',
      installation: true,
      portal: true,
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
      bodyLimit: CONFIGURATION_LIMIT,
      responses: { 200: { description: 'The installation', schema: installationSchema }, 400: { description: 'A property is refused' } },
    },
    async ({ caller, params, body }) => {
      const { target, integration } = await api.load(caller, params.id!);
      api.refuseHandSetCredentials(caller, body);
      // Webhook URLs need DNS, which workflows cannot do; every other check is the update's.
      if (integration === WEBHOOK_INTEGRATION) await api.checkWebhookConfiguration(target, body);
      const installation = await api.handle(params.id!).executeUpdate(configureUpdate, { args: [body, { byIntegration: caller.kind === 'installation' }] });
      // A DELETE that raced this edit won: the installation is gone.
      if (installation.status === 'deleted') throw notFound('installation');
      return { status: 200, body: api.withUrls(installation) };
    },
  );

  routes.add(
    { method: 'post', path: '/v1/installations/:id/pause', summary: 'Pause: events are recorded as skipped until resumed', access: 'member', responses: { 200: { description: 'The installation', schema: installationSchema } } },
    async ({ caller, params }) => {
      await api.load(caller, params.id!);
      const paused = await api.handle(params.id!).executeUpdate(pauseUpdate, { args: [undefined] });
      installationPauses.inc({ reason: 'member' });
      return { status: 200, body: api.withUrls(paused) };
    },
  );

  routes.add<ResumeRequest>(
    {
      method: 'post',
      path: '/v1/installations/:id/resume',
      summary: 'Resume a paused installation. One the platform paused held its new events: `held` delivers them in order of ingest (the default) or drops them, and `replayFailed` replays what failed from the trouble’s beginning to the pause, in a background operation the answer names',
      access: 'member',
      body: resumeSchema,
      // The body is optional: a resume as before, with none, delivers what was held.
      parseBody: (raw) => (raw === undefined ? {} : parse<ResumeRequest>(resumeSchema, raw)),
      responses: { 200: { description: 'The installation, with the operation releasing what was held', schema: { ...installationSchema, properties: { ...installationSchema.properties, operation: { type: 'string' } } } } },
    },
    async ({ caller, params, body }) => {
      await api.load(caller, params.id!);
      const resumed = await api.handle(params.id!).executeUpdate(resumeUpdate, { args: [{ ...(body?.held && { held: body.held }), ...(body?.replayFailed && { replayFailed: true }) }] });
      installationPauses.inc({ reason: 'resumed' });
      return { status: 200, body: api.withUrls(resumed) };
    },
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/installations/:id/health',
      summary: "The receiver's health: deliveries failed in a row and since when, the last success and failure, the last 24 h by status",
      access: 'member',
      responses: { 200: { description: 'Its health', schema: healthSchema }, 404: { description: 'Not found' } },
    },
    async ({ caller, params }) => {
      const installation = await api.load(caller, params.id!);
      return { status: 200, body: { ...(await deps.health.read(installation.id)), ...(installation.pause && { pause: installation.pause }) } };
    },
  );

  routes.add<{ version: number }>(
    {
      method: 'post',
      path: '/v1/installations/:id/pin',
      summary: 'Pin to a published version (earlier or later): publishes no longer move it. Configuration and credentials stay',
      access: 'member',
      body: { type: 'object', required: ['version'], additionalProperties: false, properties: { version: { type: 'integer', minimum: 1 } } },
      responses: { 200: { description: 'The installation', schema: installationSchema }, 400: { description: 'Not a published version, or a webhook installation' } },
    },
    async ({ caller, params, body }) => ({ status: 200, body: api.withUrls(await api.moveToVersion(caller, params.id!, body.version)) }),
  );

  routes.add(
    {
      method: 'post',
      path: '/v1/installations/:id/unpin',
      summary: 'Unpin: back to the latest version, and moved by publishes again',
      access: 'member',
      responses: { 200: { description: 'The installation', schema: installationSchema }, 400: { description: 'A webhook installation' } },
    },
    async ({ caller, params }) => ({ status: 200, body: api.withUrls(await api.moveToVersion(caller, params.id!, 'latest')) }),
  );

  routes.add(
    { method: 'delete', path: '/v1/installations/:id', summary: 'Delete an installation', access: 'member', responses: { 204: { description: 'Deleted' } } },
    async ({ caller, params }) => {
      await api.load(caller, params.id!);
      await api.handle(params.id!).executeUpdate(deleteUpdate);
      return { status: 204 };
    },
  );

  routes.add(
    { method: 'get', path: '/v1/installations/:id/signing-secret', summary: 'Read the signing secret (its own, with a portal link)', access: 'member', portal: true, responses: { 200: { description: 'The current secret', schema: secretSchema } } },
    async ({ caller, params }) => {
      const { secret, createdAt, previousExpiresAt } = await api.signingSecret(caller, params.id!);
      return { status: 200, body: { secret, createdAt, ...(previousExpiresAt && { previousExpiresAt }) } };
    },
  );

  routes.add(
    {
      method: 'post',
      path: '/v1/installations/:id/signing-secret/rotate',
      summary: 'Rotate the signing secret; the old one stays valid for 24 h and is signed with meanwhile (its own, with a portal link)',
      access: 'member',
      portal: true,
      responses: { 200: { description: 'The new secret', schema: secretSchema } },
    },
    async ({ caller, params }) => {
      await api.load(caller, params.id!);
      const { secret, createdAt } = await api.handle(params.id!).executeUpdate(rotateSecretUpdate, { args: [newSigningSecret()] });
      // The read model is written before the update answers: it knows the old secret's end.
      const { previousExpiresAt } = await api.signingSecret(caller, params.id!);
      return { status: 200, body: { secret, createdAt, ...(previousExpiresAt && { previousExpiresAt }) } };
    },
  );

  routes.add<{ expiresInSeconds?: number }>(
    {
      method: 'post',
      path: '/v1/installations/:id/portal-link',
      summary: 'A delivery portal link for a webhook installation: a signed, expiring URL that opens its deliveries, their replay and its signing secret to someone without an account',
      access: 'member',
      body: { type: 'object', additionalProperties: false, properties: { expiresInSeconds: { type: 'integer', minimum: 60, maximum: PORTAL_LINK_MAX_S, description: `How long the link works (default ${PORTAL_LINK_DEFAULT_S} s, at most 7 days)` } } },
      responses: { 201: { description: 'The link', schema: { type: 'object', required: ['url', 'expiresAt'], properties: { url: { type: 'string' }, expiresAt: { type: 'string' } } } }, 400: { description: 'Not a webhook installation, or a bad expiry' }, 404: { description: 'Not found' } },
    },
    async ({ caller, params, body }) => {
      const installation = await api.load(caller, params.id!);
      if (installation.integration !== WEBHOOK_INTEGRATION) throw badRequest('portal links are for webhook installations (receivers)', [{ field: 'id', message: `is an installation of ${installation.integration}` }]);
      const { token, expiresAt } = deps.portalLinks.issue(installation.id, installation.target.org, body?.expiresInSeconds ?? PORTAL_LINK_DEFAULT_S);
      return { status: 201, body: { url: `${deps.baseUrl.replace(/\/+$/, '')}/portal/${token}`, expiresAt: new Date(expiresAt).toISOString() } };
    },
  );
}
