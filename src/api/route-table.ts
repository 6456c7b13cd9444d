import Router from '@koa/router';
import type { SchemaObject } from 'ajv';
import type { Context, Next } from 'koa';
import { ApiError, notFound } from './errors';
import type { EngineWait } from './engine-wait';
import { koaBody } from 'koa-body';
import { requireAdmin, type Authenticator, type Caller } from './auth';
import { parse } from './validation';

export type Access = 'anyone' | 'admin' | 'member';

/** What a pass-through path (`method: 'all'`) takes; HEAD comes with GET. */
export const PASS_THROUGH_METHODS = ['get', 'post', 'put', 'patch', 'delete', 'options'] as const;

export interface RouteSpec {
  /** `all`: every method, for a path that passes requests through (the public endpoint). */
  method: 'get' | 'post' | 'put' | 'patch' | 'delete' | 'all';
  /** Koa syntax: /v1/installations/:id */
  path: string;
  summary: string;
  access: Access;
  /** Installation tokens may call it too (for their own installation; the handler checks which). */
  installation?: boolean;
  /** Delivery portal links may call it too (for their own installation; the handler checks which). */
  portal?: boolean;
  body?: SchemaObject;
  /** Largest accepted body; 1 MiB unless the route says otherwise. */
  bodyLimit?: string;
  /** Parses the body instead of plain schema validation, where a better message needs more. */
  parseBody?: (raw: unknown) => unknown;
  /** The body as raw bytes of any type, up to this many (and the path with anything after it). */
  rawBodyLimit?: number;
  query?: Record<string, string>;
  /**
   * The handler bounds its own waits on Temporal, shorter than a request's (EngineWait):
   * ingest, whose producers retry with eventIds and which sheds load by a fast 503, and the
   * health checks.
   */
  ownDeadline?: true;
  /** Status -> description, with the response schema where there is a body. */
  responses: Record<number, { description: string; schema?: SchemaObject }>;
}

export interface Request<Body> {
  ctx: Context;
  caller: Caller;
  body: Body;
  params: Record<string, string>;
  query: Record<string, string | undefined>;
}

type Handler<Body> = (request: Request<Body>) => Promise<{ status: number; body?: unknown; headers?: Record<string, string | string[]> }>;

/**
 * Every route is declared once: the router serves it and the OpenAPI document describes
 * it from the same spec, so the two cannot drift apart.
 */
export class RouteTable {
  readonly router = new Router();
  readonly specs: RouteSpec[] = [];

  constructor(
    private readonly auth: Authenticator,
    private readonly engine: EngineWait,
  ) {}

  /** Who a bearer token is, as every route takes it (the console's sign-in checks its token so). */
  authenticate(authorization: string): Promise<Caller> {
    return this.auth.resolve(authorization);
  }

  add<Body = undefined>(spec: RouteSpec, handler: Handler<Body>): void {
    this.specs.push(spec);
    const parser = bodyErrorsAreTheClients(spec.rawBodyLimit === undefined ? koaBody({ jsonLimit: spec.bodyLimit ?? '1mb', formLimit: '1mb', textLimit: '1mb' }) : rawBody(spec.rawBodyLimit));
    const route = (ctx: Context) => (spec.ownDeadline ? serve(ctx) : this.engine.run(() => serve(ctx)));
    const serve = async (ctx: Context) => {
      const caller: Caller = spec.access === 'anyone' ? { kind: 'member', userId: '', orgs: [] } : await this.auth.resolveRequest(ctx);
      if (spec.access === 'admin') requireAdmin(caller);
      // A portal link opens its installation's view and nothing else: anything outside it is not there.
      if (caller.kind === 'portal' && !spec.portal) throw notFound('resource');
      if (caller.kind === 'installation' && !spec.installation) throw new ApiError(403, 'forbidden', `an installation token may not call ${spec.method.toUpperCase()} ${spec.path}; it reads and configures its own installation only`);
      if (spec.rawBodyLimit === undefined && (spec.body || spec.parseBody)) checkJsonBody(ctx);
      const raw = (ctx.request as { body?: unknown }).body;
      const body = (spec.parseBody ? spec.parseBody(raw) : spec.body ? parse<Body>(spec.body, raw) : raw) as Body;
      const query = Object.fromEntries(Object.entries(ctx.query).map(([key, value]) => [key, Array.isArray(value) ? value[0] : value]));
      const answer = await handler({ ctx, caller, body, params: ctx.params as Record<string, string>, query });
      ctx.status = answer.status;
      // The API's answers are a caller's (secrets, tokens, deliveries): no cache keeps them, unless the route says (images). Integration code's answers are its own.
      if (spec.rawBodyLimit === undefined) ctx.set('Cache-Control', 'no-store');
      for (const [name, value] of Object.entries(answer.headers ?? {})) ctx.set(name, value);
      if (answer.body !== undefined) ctx.body = answer.body;
    };
    const paths = spec.rawBodyLimit === undefined ? [spec.path] : [spec.path, `${spec.path}/*path`];
    const methods = spec.method === 'all' ? PASS_THROUGH_METHODS.map((method) => method.toUpperCase()) : [spec.method.toUpperCase()];
    for (const path of paths) this.router.register(path, methods, [parser, route]);
  }
}

/**
 * A body that does not decompress (zlib's errors, for a body whose Content-Encoding lies)
 * is the client's error: a 400 naming the encoding, not a 500 with a stack in the log. The
 * parser's own refusals (413, 415, bad JSON) keep their status, its other errors stay the
 * platform's, and errors of the route after it pass untouched.
 */
function bodyErrorsAreTheClients(parser: (ctx: Context, next: Next) => Promise<unknown>) {
  return async (ctx: Context, next: Next): Promise<void> => {
    let parsed = false;
    try {
      await parser(ctx, () => {
        parsed = true;
        return next();
      });
    } catch (err) {
      const { status, code } = err as { status?: unknown; code?: unknown };
      const undecodable = typeof code === 'string' && /^(Z_|ERR_.*BROTLI|ERR_ZLIB)/.test(code);
      if (parsed || !undecodable || (typeof status === 'number' && status >= 400 && status < 500)) throw err;
      const encoding = ctx.get('content-encoding');
      throw new ApiError(400, 'invalid_request', `request body could not be read${encoding ? ` as Content-Encoding ${encoding}` : ''}: ${(err as Error).message}`);
    }
  };
}

/** The request body as bytes, whatever its type, refused past `limit` (413). */
function rawBody(limit: number) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw new ApiError(413, 'payload_too_large', `request body too large: the limit is ${limit} bytes (${limit / 1024 / 1024} MiB)`);
      chunks.push(chunk);
    }
    (ctx.request as { body?: unknown }).body = Buffer.concat(chunks);
    await next();
  };
}

/** How deep a JSON body may nest: deeper is no configuration or event, and could not be stored. */
export const MAX_BODY_DEPTH = 32;

/** A JSON route takes application/json (415 otherwise), nested at most MAX_BODY_DEPTH deep. */
function checkJsonBody(ctx: Context): void {
  const hasBody = Number(ctx.get('content-length') || 0) > 0 || ctx.get('transfer-encoding') !== '';
  if (hasBody && !ctx.is('application/json')) throw new ApiError(415, 'unsupported_media_type', `send the body as application/json, not ${ctx.get('content-type') || 'without a content type'}`);
  let level: unknown[] = [(ctx.request as { body?: unknown }).body];
  for (let depth = 0; level.length; depth++) {
    if (depth > MAX_BODY_DEPTH) throw new ApiError(400, 'invalid_request', `the body nests deeper than ${MAX_BODY_DEPTH} levels`, [{ field: '(body)', message: `nests deeper than ${MAX_BODY_DEPTH} levels` }]);
    level = level.flatMap((value) => (typeof value === 'object' && value !== null ? Object.values(value) : []));
  }
}
