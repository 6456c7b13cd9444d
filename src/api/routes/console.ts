import type { Context } from 'koa';
import { SESSION_COOKIE, type Caller } from '../auth';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import type { RouteTable } from '../route-table';

const sessionSchema = {
  type: 'object',
  required: ['csrfToken', 'caller', 'expiresAt'],
  properties: {
    csrfToken: { type: 'string', description: 'Carried in X-CSRF-Token by every request of the session that changes something' },
    caller: { type: 'object', required: ['kind'], properties: { kind: { enum: ['admin', 'member'] }, userId: { type: 'string' }, orgs: { type: 'array', items: { type: 'string' } } } },
    expiresAt: { type: 'string' },
  },
};

const callerOf = (caller: Caller) => (caller.kind === 'member' ? { kind: caller.kind, userId: caller.userId, orgs: caller.orgs } : { kind: caller.kind });

/**
 * The web console's sign-in: a token the platform issued (a member's, or the administrator's)
 * becomes a session in a cookie that scripts cannot read; the console's requests then act
 * as that token, through the same routes and checks as any client's.
 */
export function consoleRoutes(routes: RouteTable, deps: ApiDeps): void {
  const secure = new URL(deps.baseUrl).protocol === 'https:';
  const setCookie = (ctx: Context, secret: string | null, expiresAt?: number) => {
    // Behind the TLS proxy its https base URL says there is (the API itself listens plain): the cookies library refuses Secure otherwise.
    if (secure) ctx.cookies.secure = true;
    ctx.cookies.set(SESSION_COOKIE, secret, { httpOnly: true, sameSite: 'strict', secure, path: '/', overwrite: true, ...(expiresAt !== undefined ? { expires: new Date(expiresAt) } : { maxAge: 0 }) });
  };

  routes.add<{ token: string }>(
    {
      method: 'post',
      path: '/console/session',
      summary: 'Sign in to the web console with a token the platform issued; the session is a cookie (HttpOnly, SameSite=Strict)',
      access: 'anyone',
      body: { type: 'object', required: ['token'], additionalProperties: false, properties: { token: { type: 'string', minLength: 1, maxLength: 512 } } },
      responses: { 201: { description: 'Signed in', schema: sessionSchema }, 401: { description: 'The token is not one the platform issued' } },
    },
    async ({ ctx, body }) => {
      const caller = await signingIn(body.token);
      // A sign-in over a session of this browser ends that one (it is not left valid until it expires).
      const previous = ctx.cookies.get(SESSION_COOKIE);
      if (previous) await deps.consoleSessions.end(previous);
      const session = await deps.consoleSessions.begin(body.token);
      setCookie(ctx, session.secret, session.expiresAt);
      return { status: 201, body: { csrfToken: session.csrf, caller: callerOf(caller), expiresAt: new Date(session.expiresAt).toISOString() } };
    },
  );

  routes.add(
    { method: 'get', path: '/console/session', summary: 'The console session of this cookie: who it acts as, and its CSRF token', access: 'member', responses: { 200: { description: 'Signed in', schema: sessionSchema }, 401: { description: 'Not signed in' } } },
    async ({ ctx, caller }) => {
      const session = await sessionOf(ctx, deps);
      return { status: 200, body: { csrfToken: session.csrf, caller: callerOf(caller), expiresAt: new Date(session.expiresAt).toISOString() } };
    },
  );

  routes.add(
    { method: 'delete', path: '/console/session', summary: 'Sign out of the web console: the session ends on every API process', access: 'member', responses: { 204: { description: 'Signed out' }, 401: { description: 'Not signed in' } } },
    async ({ ctx }) => {
      const secret = ctx.cookies.get(SESSION_COOKIE);
      if (secret) await deps.consoleSessions.end(secret);
      setCookie(ctx, null);
      return { status: 204 };
    },
  );

  /** A sign-in's token as the API would take it: a member's or the administrator's (installation tokens are integration code's, portal links open their own page). */
  async function signingIn(token: string): Promise<Caller> {
    const caller = await routes.authenticate(`Bearer ${token}`);
    if (caller.kind === 'installation' || caller.kind === 'portal') throw new ApiError(401, 'unauthorized', `${caller.kind === 'portal' ? 'a portal link' : 'an installation token'} cannot sign in to the console`);
    return caller;
  }
}

async function sessionOf(ctx: Context, deps: ApiDeps) {
  const secret = ctx.cookies.get(SESSION_COOKIE);
  const session = secret ? await deps.consoleSessions.find(secret) : undefined;
  if (!session) throw new ApiError(401, 'unauthorized', 'not signed in to the console (a bearer token has no console session)');
  return session;
}
