import type { Payload } from '@temporalio/common';
import type { Context, Next } from 'koa';
import type { ApiDeps } from '../deps';
import { ApiError, badRequest } from '../errors';
import { fromThisHost, sameSecret } from '../auth';
import { parse } from '../validation';
import type { RouteTable } from '../route-table';

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const fromJson = (payload: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')])),
  data: Buffer.from(payload.data ?? '', 'base64'),
});

const toJson = (payload: Payload): JsonPayload => ({
  metadata: Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value).toString('base64')])),
  data: Buffer.from(payload.data ?? []).toString('base64'),
});

const payloadsSchema = {
  type: 'object',
  required: ['payloads'],
  properties: { payloads: { type: 'array', items: { type: 'object', properties: { metadata: { type: 'object', additionalProperties: { type: 'string' } }, data: { type: 'string' } } } } },
};

/** CORS for the Temporal UI's origin, which calls the codec endpoint from the browser. */
export function codecCors(origins: string[]) {
  return async (ctx: Context, next: Next): Promise<void> => {
    if (!ctx.path.startsWith('/codec/')) return next();
    const origin = ctx.get('origin');
    if (origin && origins.includes(origin)) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Allow-Credentials', 'true');
      ctx.set('Access-Control-Allow-Headers', 'content-type, x-namespace, authorization');
      ctx.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
      ctx.set('Vary', 'Origin');
    }
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      return;
    }
    return next();
  };
}

/**
 * The Temporal codec-server protocol (DESIGN.md §5): lets the Temporal UI and CLI show
 * encrypted payloads. Open to the administrator's bearer token, and in the embedded
 * default to loopback callers (its own UI in a local browser).
 */
export function codecRoutes(routes: RouteTable, { codec: processCodec, adminToken, codecTrustsLoopback }: ApiDeps): void {
  const codec = processCodec.unrecorded();
  const admin = `Bearer ${adminToken}`;
  for (const direction of ['encode', 'decode'] as const) {
    routes.add<{ payloads: JsonPayload[] }>(
      {
        method: 'post',
        path: `/codec/${direction}`,
        summary: `Temporal codec server: ${direction} payloads (administrator; loopback in the embedded default)`,
        access: 'anyone',
        body: payloadsSchema,
        // Parsed after the caller is known, so strangers learn nothing from validation errors.
        parseBody: (raw) => raw,
        responses: { 200: { description: `The ${direction}d payloads`, schema: payloadsSchema } },
      },
      async ({ ctx, body: raw }) => {
        const fromLoopback = codecTrustsLoopback && fromThisHost(ctx);
        if (!fromLoopback && !sameSecret(ctx.get('authorization'), admin)) throw new ApiError(401, 'unauthorized', 'the codec endpoint needs the administrator token from outside this host');
        const body = parse<{ payloads: JsonPayload[] }>(payloadsSchema, raw);
        const payloads = await codec[direction](body.payloads.map(fromJson)).catch((err: Error) => Promise.reject(badRequest(`cannot ${direction} payloads: ${err.message}`)));
        return { status: 200, body: { payloads: payloads.map(toJson) } };
      },
    );
  }
}
