import { WEBHOOK_INTEGRATION } from '../../integrations/webhook';
import { requireMember } from '../auth';
import type { ApiDeps } from '../deps';
import { notFound } from '../errors';
import { IntegrationCatalog } from '../integration-catalog';
import { PublishService, type PublishBody } from '../publish-service';
import type { RouteTable } from '../route-table';
import { listOf } from '../schemas';

const publishSchema = {
  type: 'object',
  required: ['manifest', 'script'],
  additionalProperties: false,
  properties: {
    manifest: { type: 'string', minLength: 1, maxLength: 65536, description: 'platform-manifest.yaml as text, secrets still as ${{ env.NAME }}' },
    script: { type: 'string', description: 'The script bundled as one ES module, at most 1 MiB' },
    assets: { type: 'object', additionalProperties: { type: 'string' }, description: 'Path next to the manifest -> base64' },
    secrets: { type: 'object', additionalProperties: { type: 'string' }, description: 'Secret name -> value, substituted by the CLI' },
  },
};

const summarySchema = { type: 'object', required: ['name', 'visibility', 'latestVersion', 'title'], properties: { name: { type: 'string' }, visibility: { type: 'string' }, latestVersion: { type: 'integer' }, title: { type: 'string' } } };

export function integrationRoutes(routes: RouteTable, deps: ApiDeps): void {
  const catalog = new IntegrationCatalog(deps.client);
  const publisher = new PublishService(deps.client, deps.taskQueue, deps.directory);

  routes.add<PublishBody>(
    {
      method: 'post',
      path: '/v1/integrations',
      summary: 'Publish a new immutable version of an integration',
      access: 'member',
      body: publishSchema,
      bodyLimit: '3mb',
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
    async ({ caller, params, query }) => ({ status: 200, body: (await catalog.readable(caller, params.name!, query.installLink)).summary }),
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
      const state = await catalog.state(params.name!);
      if (!state?.summary || params.name === WEBHOOK_INTEGRATION) throw notFound('integration');
      requireMember(caller, state.ownerOrg, 'integration');
      return { status: 200, body: { token: state.installLinkToken, url: `${deps.baseUrl}/v1/integrations/${state.name}?installLink=${state.installLinkToken}` } };
    },
  );
}
