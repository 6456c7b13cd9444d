import { PASS_THROUGH_METHODS, type RouteSpec } from './route-table';
import { errorSchema } from './schemas';
import { PLATFORM_VERSION } from '../version';

const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z]+)/g, '{$1}');

/** OpenAPI 3.1 of every route in the table, from the same specs that serve them. */
export function openApiDocument(specs: RouteSpec[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of specs) {
    const path = toOpenApiPath(spec.path);
    const parameters = [
      ...[...spec.path.matchAll(/:([A-Za-z]+)/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      ...Object.entries(spec.query ?? {}).map(([name, description]) => ({ name, in: 'query', required: false, description, schema: { type: 'string' } })),
    ];
    const responses: Record<string, unknown> = {};
    for (const [status, { description, schema }] of Object.entries(spec.responses)) {
      responses[status] = schema ? { description, content: { 'application/json': { schema } } } : { description };
    }
    responses['4XX'] = { description: 'Refused; the body names the problem', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    // A pass-through path takes every method (and anything after it).
    for (const method of spec.method === 'all' ? PASS_THROUGH_METHODS : [spec.method]) {
      (paths[path] ??= {})[method] = {
        summary: spec.summary,
        operationId: `${method}${spec.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
        ...(spec.access === 'anyone' ? { security: [] } : {}),
        ...(parameters.length ? { parameters } : {}),
        ...(spec.body ? { requestBody: { required: true, content: { 'application/json': { schema: spec.body } } } } : {}),
        ...(spec.rawBodyLimit !== undefined ? { requestBody: { required: false, content: { '*/*': { schema: {} } } } } : {}),
        responses,
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Integration platform API', version: PLATFORM_VERSION },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, schemas: { Error: errorSchema } },
    paths,
  };
}
