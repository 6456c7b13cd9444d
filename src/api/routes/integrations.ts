import { WEBHOOK_INTEGRATION } from '../../installations/webhook';
import { assetUrl } from '../../installations/urls';
import { LOG_LEVELS, type LogCursor, type LogLevel } from '../../delivery-log/integration-logs';
import { requireMember, type Caller } from '../auth';
import type { ApiDeps } from '../deps';
import { notFound } from '../errors';
import { IntegrationCatalog } from '../integration-catalog';
import { PublishService, type PublishBody } from '../publish-service';
import type { RouteTable } from '../route-table';
import { listOf } from '../schemas';
import { checkListQuery, isoTime } from '../list-query';

const publishSchema = {
  type: 'object',
  required: ['manifest', 'script'],
  additionalProperties: false,
  properties: {
    manifest: { type: 'string', minLength: 1, maxLength: 65536, description: 'platform-manifest.yaml as text, secrets still as ${{ env.NAME }}' },
    script: { type: 'string', description: 'The script bundled as one ES module, at most 1 MiB' },
    sourceMap: { type: 'string', maxLength: 4194304, description: 'The bundle’s source map (positions only): stacks in the integration’s log name source lines' },
    assets: { type: 'object', additionalProperties: { type: 'string' }, description: 'Path next to the manifest -> base64' },
    secrets: { type: 'object', additionalProperties: { type: 'string' }, description: 'Secret name -> value, substituted by the CLI' },
    dev: { type: 'boolean', description: 'A development version (platform dev): never the latest, run only by the owning organization’s installations pinned to it' },
  },
};

const summarySchema = {
  type: 'object',
  required: ['name', 'visibility', 'latestVersion', 'title'],
  properties: {
    name: { type: 'string' },
    visibility: { type: 'string' },
    latestVersion: { type: 'integer' },
    title: { type: 'string' },
    urls: { type: 'object', properties: { icon: { type: 'string' }, previewImages: { type: 'array', items: { type: 'string' } } }, description: 'The latest version’s images, served by /v1/assets' },
  },
};
const ASSET_HASH = /^[0-9a-f]{64}$/;

const logLineSchema = {
  type: 'object',
  required: ['id', 'time', 'level', 'kind', 'installationId', 'version', 'message'],
  properties: {
    id: { type: 'string' },
    time: { type: 'string', format: 'date-time' },
    level: { enum: [...LOG_LEVELS] },
    kind: { type: 'string', description: 'fetch, event, component, load (the script’s top level), or platform (the platform’s own word, such as lines dropped)' },
    installationId: { type: 'string' },
    organizationId: { type: 'string' },
    integration: { type: 'string' },
    version: { type: 'integer' },
    eventId: { type: 'string' },
    traceId: { type: 'string' },
    message: { type: 'string' },
  },
};
const LOG_QUERY = { ids: ['installation'], choices: { level: LOG_LEVELS }, times: ['since'], pageSize: { default: 100, max: 1000 } } as const;

export function integrationRoutes(routes: RouteTable, deps: ApiDeps): void {
  const catalog = new IntegrationCatalog(deps.client);
  const publisher = new PublishService(deps.client, deps.taskQueue, deps.directory, deps.assets);

  /** An integration its caller owns (a member of its organization, or the administrator): 404 for anyone else. */
  async function owned(caller: Caller, name: string) {
    const state = await catalog.state(name);
    if (!state?.summary || name === WEBHOOK_INTEGRATION) throw notFound('integration');
    requireMember(caller, state.ownerOrg, 'integration');
    return state;
  }

  routes.add<PublishBody>(
    {
      method: 'post',
      path: '/v1/integrations',
      summary: 'Publish a new immutable version of an integration',
      access: 'member',
      body: publishSchema,
      // The script's 1 MiB and 8 MiB of images, base64.
      bodyLimit: '13mb',
      responses: { 201: { description: '{name, version}' }, 400: { description: 'One detail per broken rule, with manifest path, line and column' }, 409: { description: 'The name belongs to another organization' } },
    },
    async ({ caller, body }) => ({ status: 201, body: await publisher.publish(caller, body) }),
  );

  routes.add(
    { method: 'get', path: '/v1/integrations', summary: 'Integrations the caller may see: public ones and its organizations’ own', access: 'member', responses: { 200: { description: 'Integrations', schema: listOf(summarySchema) } } },
    async ({ caller }) => ({ status: 200, body: { items: await catalog.list(caller) } }),
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/integrations/:name',
      summary: 'One integration (an unlisted one with ?installLink=<token>)',
      access: 'member',
      query: { installLink: 'Install link token of an unlisted integration' },
      responses: { 200: { description: 'The integration', schema: summarySchema }, 404: { description: 'Not found or not visible' } },
    },
    async ({ caller, params, query }) => {
      const { summary } = await catalog.readable(caller, params.name!, query.installLink);
      const { images, ...shown } = summary!;
      const urls = { ...(images?.icon && { icon: assetUrl(deps.baseUrl, images.icon) }), ...(images?.previewImages && { previewImages: images.previewImages.map((hash) => assetUrl(deps.baseUrl, hash)) }) };
      return { status: 200, body: { ...shown, ...(Object.keys(urls).length && { urls }) } };
    },
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/assets/:hash',
      summary: 'An integration’s image (icon, preview) by the SHA-256 of its bytes: immutable, for anyone who has its URL',
      access: 'anyone',
      responses: { 200: { description: 'The image (PNG or JPEG)' }, 404: { description: 'No such image' } },
    },
    async ({ params }) => {
      const asset = ASSET_HASH.test(params.hash!) ? await deps.assets.get(params.hash!) : undefined;
      // Images only: a version's source map is the platform's to read, not anyone's.
      if (!asset || !asset.contentType.startsWith('image/')) throw notFound('asset');
      return { status: 200, headers: { 'content-type': asset.contentType, 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' }, body: asset.bytes };
    },
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/integrations/:name/install-link',
      summary: 'The install link of an integration, for its owners',
      access: 'member',
      responses: { 200: { description: '{token, url}' }, 404: { description: 'Not found or not an owner' } },
    },
    async ({ caller, params }) => {
      const state = await owned(caller, params.name!);
      return { status: 200, body: { token: state.installLinkToken, url: `${deps.baseUrl}/v1/integrations/${state.name}?installLink=${state.installLinkToken}` } };
    },
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/integrations/:name/logs',
      summary: 'The integration’s log, newest first: its code’s console lines and uncaught errors in every installation, for its owners',
      access: 'member',
      query: {
        installation: 'Installation id',
        level: `${LOG_LEVELS.join(', ')}: this level and those above it`,
        since: 'RFC 3339 time, with its offset',
        limit: `Page size, 1 to ${LOG_QUERY.pageSize.max} (${LOG_QUERY.pageSize.default} unless given)`,
        pageToken: 'From the previous page',
      },
      responses: { 200: { description: 'Log lines', schema: listOf(logLineSchema) }, 404: { description: 'Not found or not an owner' } },
    },
    async ({ caller, params, query }) => {
      const pageSize = checkListQuery(query, LOG_QUERY);
      const { name } = await owned(caller, params.name!);
      const filter = { integration: name, installation: query.installation, level: query.level as LogLevel | undefined, since: query.since === undefined ? undefined : isoTime(query.since) };
      return { status: 200, body: await deps.pageTokens.page('integration-logs', query.pageToken, (after?: LogCursor) => deps.integrationLogs.page(filter, pageSize, after)) };
    },
  );
}
