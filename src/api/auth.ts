import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiError, notFound } from './errors';
import type { DirectoryIndex, Principal } from '../delivery-log/directory-index';
import { TtlCache } from '../ttl-cache';
import type { Context } from 'koa';
import type { ConsoleSessions } from '../delivery-log/console-sessions';
import type { PortalLinks } from './portal-links';
import type { InstallationIndex } from '../installations/read-model';
import type { InstallationTokens } from '../integrations/installation-tokens';

/** The console's session cookie (see ConsoleSessions). */
export const SESSION_COOKIE = 'platform_session';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export type Caller =
  | { kind: 'admin' }
  | { kind: 'member'; userId: string; orgs: string[] }
  /** An integration's code, with its installation's token: its own installation only. */
  | { kind: 'installation'; installationId: string; org: string; scopes: string[] }
  /** A receiver, through a delivery portal link: that installation's deliveries and secret only, until the link expires. */
  | { kind: 'portal'; installationId: string; org: string };

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');
export const newUserToken = (): string => `ptk_${randomBytes(32).toString('base64url')}`;

const unauthorized = () => new ApiError(401, 'unauthorized', 'missing or invalid bearer token');

/** What secrets are compared by: equal lengths whatever the secret's. */
const digestOf = (secret: string): Buffer => createHash('sha256').update(secret).digest();

/** Constant-time comparison of two secrets of any length. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digestOf(a), digestOf(b));
}

/**
 * Resolves bearer tokens: the admin token by constant-time comparison, user tokens by their
 * hash in the directory's read model (so authentication works while Temporal is away).
 * Lookups are cached briefly so that a request costs no query; two API processes agree
 * within that TTL.
 */
export class Authenticator {
  private readonly principals: TtlCache<string, Principal | undefined>;
  /** Hashed once: every request compares its token with it. */
  private readonly adminDigest: Buffer;

  constructor(
    directory: DirectoryIndex,
    adminToken: string,
    private readonly installationTokens: InstallationTokens,
    private readonly installations: InstallationIndex,
    private readonly sessions?: ConsoleSessions,
    private readonly portalLinks?: PortalLinks,
    ttlMs = 5_000,
  ) {
    this.adminDigest = digestOf(adminToken);
    this.principals = new TtlCache(ttlMs, (hash) => directory.principal(hash));
  }

  /**
   * The caller of a request: its bearer token, or else its console session's (the cookie
   * `platform_session`), whose state-changing requests must carry the session's CSRF token
   * in `X-CSRF-Token` (the cookie is SameSite=Strict besides).
   */
  async resolveRequest(ctx: Context): Promise<Caller> {
    const authorization = ctx.get('authorization');
    const secret = authorization ? undefined : ctx.cookies.get(SESSION_COOKIE);
    if (!secret || !this.sessions) return this.resolve(authorization);
    const session = await this.sessions.find(secret);
    if (!session) throw new ApiError(401, 'unauthorized', 'the console session ended or expired; sign in again');
    if (!SAFE_METHODS.has(ctx.method) && !sameSecret(ctx.get('x-csrf-token'), session.csrf)) throw new ApiError(403, 'csrf_token_invalid', 'a console request that changes something must carry the session’s X-CSRF-Token');
    return this.resolve(`Bearer ${session.token}`);
  }

  async resolve(authorization: string | undefined): Promise<Caller> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match) throw unauthorized();
    const token = match[1]!;
    if (timingSafeEqual(digestOf(token), this.adminDigest)) return { kind: 'admin' };
    if (token.startsWith('itk_')) {
      const installationId = this.installationTokens.verify(token);
      const installation = installationId && (await this.installations.getMany([installationId])).get(installationId);
      // Paused, its code is not called, so nothing of it may act: a token copied out of the isolate included.
      if (!installation || installation.status === 'deleted' || installation.status === 'paused') throw unauthorized();
      return { kind: 'installation', installationId: installation.id, org: installation.target.org, scopes: installation.scopes };
    }
    if (token.startsWith('plk_') && this.portalLinks) {
      const grant = this.portalLinks.verify(token);
      if (grant === 'expired') throw new ApiError(401, 'portal_link_expired', 'this portal link has expired: ask the installation’s owner for a new one');
      const installation = grant && (await this.installations.getMany([grant.installationId])).get(grant.installationId);
      if (!installation || installation.status === 'deleted' || installation.target.org !== grant!.org) throw unauthorized();
      return { kind: 'portal', installationId: installation.id, org: installation.target.org };
    }
    const principal = await this.principals.get(hashToken(token));
    if (!principal) throw unauthorized();
    return { kind: 'member', ...principal };
  }
}

/** The one installation an installation token or a portal link acts for; undefined for people. */
export function scopedInstallation(caller: Caller): string | undefined {
  return caller.kind === 'installation' || caller.kind === 'portal' ? caller.installationId : undefined;
}

export function requireAdmin(caller: Caller): void {
  if (caller.kind !== 'admin') throw new ApiError(403, 'forbidden', 'this route is for the platform administrator');
}

/** Installation tokens are members of nothing: only routes for their own installation admit them. */
export function isMember(caller: Caller, orgId: string): boolean {
  return caller.kind === 'admin' || (caller.kind === 'member' && caller.orgs.includes(orgId));
}

/** Another organization's resource answers 404, exactly as a missing one: ids do not leak. */
export function requireMember(caller: Caller, orgId: string, what: string): void {
  if (!isMember(caller, orgId)) throw notFound(what);
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/** The request came over loopback: from this host (the API never trusts a proxy's headers). */
export function fromThisHost(ctx: { req: { socket: { remoteAddress?: string } } }): boolean {
  return LOOPBACK.has(ctx.req.socket.remoteAddress ?? '');
}
