import { createHmac, timingSafeEqual } from 'node:crypto';

/** A portal link's life unless asked otherwise, and the longest one may have. */
export const PORTAL_LINK_DEFAULT_S = 60 * 60;
export const PORTAL_LINK_MAX_S = 7 * 24 * 60 * 60;

export interface PortalGrant {
  installationId: string;
  org: string;
  expiresAt: number;
}

/**
 * The delivery portal's links: a receiver's view of one installation, for someone without
 * an account. A link's token names the installation, its organization and its expiry,
 * signed with a key derived from PLATFORM_ENCRYPTION_KEY (every API process verifies it,
 * nothing is stored); it is worth that installation only until it expires, and deleting
 * the installation voids it.
 */
export class PortalLinks {
  private readonly key: Buffer;

  constructor(encryptionKey: string) {
    this.key = createHmac('sha256', Buffer.from(encryptionKey, 'base64')).update('portal-links').digest();
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }

  issue(installationId: string, org: string, seconds: number, now = Date.now()): { token: string; expiresAt: number } {
    const expiresAt = now + seconds * 1000;
    const payload = Buffer.from(JSON.stringify({ i: installationId, o: org, e: expiresAt })).toString('base64url');
    return { token: `plk_${payload}.${this.mac(payload)}`, expiresAt };
  }

  /** What a token grants; 'expired' for a good one past its time; undefined for anything else (altered, not ours). */
  verify(token: string, now = Date.now()): PortalGrant | 'expired' | undefined {
    const match = /^plk_([A-Za-z0-9_-]{1,600})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!match) return undefined;
    const [expected, given] = [Buffer.from(this.mac(match[1]!)), Buffer.from(match[2]!)];
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const { i, o, e } = JSON.parse(Buffer.from(match[1]!, 'base64url').toString('utf8')) as { i: string; o: string; e: number };
    return e <= now ? 'expired' : { installationId: i, org: o, expiresAt: e };
  }
}
