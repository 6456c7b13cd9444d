import type { ApiDeps } from '../deps';
import { fromThisHost, sameSecret } from '../auth';
import { registry } from '../../metrics';
import { ApiError } from '../errors';
import { openApiDocument } from '../openapi';
import { manifestSchema } from '../../manifest/validate';
import { eventSchemas } from '../../webhooks/events';
import type { RouteTable } from '../route-table';

/** A check's failure that tells whoever asks why: nothing in it is secret (key ids are hash prefixes). */
class SaidCheckFailure extends Error {}

const healthSchema = { type: 'object', required: ['status'], properties: { status: { const: 'ok' }, checks: { type: 'object', additionalProperties: { type: 'string' } } } };

/** Each dependency gets this long to answer a health check. */
const CHECK_MS = 1500;
const NO_ANSWER = `no answer within ${CHECK_MS} ms`;

export function systemRoutes(routes: RouteTable, { client, baseUrl, installations, adminToken, logger, liveness, codec }: ApiDeps): void {
  routes.add(
    {
      method: 'get',
      path: '/metrics',
      summary: 'Prometheus metrics: without a token from this host, with the administrator’s token from elsewhere',
      access: 'anyone',
      responses: { 200: { description: 'Prometheus text format' }, 401: { description: 'From elsewhere without the administrator token' } },
    },
    async ({ ctx }) => {
      if (!fromThisHost(ctx) && !sameSecret(ctx.get('authorization'), `Bearer ${adminToken}`)) throw new ApiError(401, 'unauthorized', 'metrics need the administrator token from outside this host');
      return { status: 200, headers: { 'content-type': registry.contentType }, body: await registry.metrics() };
    },
  );
  const checks: Record<string, () => Promise<unknown>> = {
    temporal: () => client.withDeadline(Date.now() + CHECK_MS, () => client.workflowService.getSystemInfo({})),
    database: () => installations.ping(),
    // Payloads this process cannot open fail every workflow task that carries them.
    keys: async () => {
      if (codec.unknownKeys.size) throw new SaidCheckFailure(`payloads sealed with key ${[...codec.unknownKeys].join(', ')} reach this process, which lacks it (PLATFORM_ENCRYPTION_KEY, PLATFORM_DECRYPTION_KEYS)`);
    },
  };
  /** Every dependency at once, each bounded: ready when all answer, otherwise 503 naming what is down. */
  async function readiness() {
    const outcomes = await Promise.all(
      Object.entries(checks).map(async ([name, check]) => {
        const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(NO_ANSWER)), CHECK_MS).unref());
        return Promise.race([check(), timeout]).then(
          () => ({ name, ok: true, said: false, message: 'ok' }),
          (err: Error) => {
            // The raw error names hosts and ports: in the log, not to whoever asks (this route is open).
            if (err.message !== NO_ANSWER) logger.warn({ dependency: name, reason: err.message.split('\n')[0] }, 'readiness check failed');
            const said = err instanceof SaidCheckFailure;
            return { name, ok: false, said, message: err.message === NO_ANSWER || said ? err.message : 'does not answer' };
          },
        );
      }),
    );
    const down = outcomes.filter((outcome) => !outcome.ok);
    if (down.length) throw new ApiError(503, 'unavailable', `${down.map((d) => d.name).join(' and ')} ${down.length === 1 ? 'is' : 'are'} not ${down.every((d) => d.said) ? 'ready' : 'reachable'}`, down.map((d) => ({ field: d.name, message: d.message })));
    return { status: 200, body: { status: 'ok', checks: Object.fromEntries(outcomes.map((o) => [o.name, o.message])) } };
  }
  const healthResponses = { 200: { description: 'Every dependency answers', schema: healthSchema }, 503: { description: 'Named in details: what does not answer' } };
  routes.add({ method: 'get', path: '/readyz', summary: 'Ready when Temporal and the delivery log answer (each within 1.5 s) and no payload sealed with a key this process lacks has reached it', access: 'anyone', ownDeadline: true, responses: healthResponses }, readiness);
  routes.add({ method: 'get', path: '/healthz', summary: 'Same as /readyz', access: 'anyone', ownDeadline: true, responses: healthResponses }, readiness);
  routes.add(
    {
      method: 'get',
      path: '/livez',
      summary: 'Alive: the process answers and can recover by itself, whatever its dependencies do (503 once the embedded dev server cannot be restarted)',
      access: 'anyone',
      responses: { 200: { description: 'Alive', schema: healthSchema }, 503: { description: 'The process cannot recover by itself: restart it' } },
    },
    async () => {
      const alive = liveness?.() ?? { ok: true };
      if (!alive.ok) throw new ApiError(503, 'unavailable', alive.reason, [{ field: 'temporal', message: alive.reason }]);
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
