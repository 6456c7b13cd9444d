import Router from '@koa/router';
import type { SchemaObject } from 'ajv';
import type { Context } from 'koa';
import { koaBody } from 'koa-body';
import { requireAdmin, type Authenticator, type Caller } from './auth';
import { parse } from './validation';

export type Access = 'anyone' | 'admin' | 'member';

export interface RouteSpec {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Koa syntax: /v1/installations/:id */
  path: string;
  summary: string;
  access: Access;
  body?: SchemaObject;
  /** Largest accepted body; 1 MiB unless the route says otherwise. */
  bodyLimit?: string;
  /** Parses the body instead of plain schema validation, where a better message needs more. */
  parseBody?: (raw: unknown) => unknown;
  query?: Record<string, string>;
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

type Handler<Body> = (request: Request<Body>) => Promise<{ status: number; body?: unknown }>;

/**
 * Every route is declared once: the router serves it and the OpenAPI document describes
 * it from the same spec, so the two cannot drift apart.
 */
export class RouteTable {
  readonly router = new Router();
  readonly specs: RouteSpec[] = [];

  constructor(private readonly auth: Authenticator) {}

  add<Body = undefined>(spec: RouteSpec, handler: Handler<Body>): void {
    this.specs.push(spec);
    const body = koaBody({ jsonLimit: spec.bodyLimit ?? '1mb', formLimit: '1mb', textLimit: '1mb' });
    this.router[spec.method](spec.path, body, async (ctx) => {
      const caller: Caller = spec.access === 'anyone' ? { kind: 'member', userId: '', orgs: [] } : await this.auth.resolve(ctx.get('authorization'));
      if (spec.access === 'admin') requireAdmin(caller);
      const raw = (ctx.request as { body?: unknown }).body;
      const body = (spec.parseBody ? spec.parseBody(raw) : spec.body ? parse<Body>(spec.body, raw) : undefined) as Body;
      const query = Object.fromEntries(Object.entries(ctx.query).map(([key, value]) => [key, Array.isArray(value) ? value[0] : value]));
      const answer = await handler({ ctx, caller, body, params: ctx.params as Record<string, string>, query });
      ctx.status = answer.status;
      if (answer.body !== undefined) ctx.body = answer.body;
    });
  }
}
