import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { openApiDocument } from '../openapi';
import { manifestSchema } from '../../manifest/validate';
import { eventSchemas } from '../../webhooks/events';
import type { RouteTable } from '../route-table';

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
    { method: 'get', path: '/schemas/events.json', summary: 'JSON Schema of each event type POST /v1/events takes', access: 'anyone', responses: { 200: { description: 'Event type -> JSON Schema' } } },
    async () => ({ status: 200, body: eventSchemas }),
  );
  routes.add(
    { method: 'get', path: '/schemas/platform-manifest.json', summary: 'JSON Schema of platform-manifest.yaml', access: 'anyone', responses: { 200: { description: 'JSON Schema (draft-07)' } } },
    async () => ({ status: 200, body: manifestSchema }),
  );
}
