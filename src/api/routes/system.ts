import { WEBHOOK_INTEGRATION, webhookConfigurations } from '../../integrations/webhook';
import type { ApiDeps } from '../deps';
import { ApiError, notFound } from '../errors';
import { openApiDocument } from '../openapi';
import type { RouteTable } from '../route-table';

/** The built-in webhook integration, public and present from the start (DESIGN.md §3). */
const webhookIntegration = {
  name: WEBHOOK_INTEGRATION,
  title: 'Webhooks',
  description: 'Forward selected events to a URL, signed, with retries.',
  visibility: 'public',
  version: 1,
  targets: ['organization', 'space', 'site'],
  configurations: webhookConfigurations,
};

export function systemRoutes(routes: RouteTable, { client, baseUrl }: ApiDeps): void {
  routes.add(
    { method: 'get', path: '/healthz', summary: 'Healthy when Temporal answers', access: 'anyone', responses: { 200: { description: 'Healthy' }, 503: { description: 'Temporal unreachable' } } },
    async () => {
      try {
        await client.workflowService.getSystemInfo({});
      } catch {
        throw new ApiError(503, 'unavailable', 'Temporal is not reachable');
      }
      return { status: 200, body: { status: 'ok' } };
    },
  );
  routes.add(
    { method: 'get', path: '/openapi.json', summary: 'This document', access: 'anyone', responses: { 200: { description: 'OpenAPI 3.1' } } },
    async () => ({ status: 200, body: openApiDocument(routes.specs, baseUrl) }),
  );
  routes.add(
    { method: 'get', path: '/v1/integrations', summary: 'Integrations the caller may see', access: 'member', responses: { 200: { description: 'Integrations' } } },
    async () => ({ status: 200, body: { items: [webhookIntegration] } }),
  );
  routes.add(
    { method: 'get', path: '/v1/integrations/:name', summary: 'One integration', access: 'member', responses: { 200: { description: 'The integration' }, 404: { description: 'Not found' } } },
    async ({ params }) => {
      if (params.name !== WEBHOOK_INTEGRATION) throw notFound('integration');
      return { status: 200, body: webhookIntegration };
    },
  );
}
