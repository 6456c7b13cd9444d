import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Schema } from '../delivery-log/schema';

/** How long an OAuth state may wait for the provider's redirect. */
export const OAUTH_STATE_TTL_MS = 10 * 60 * 1000;

/**
 * What an integration's OAuth flow spends, each signed by the platform (a key derived from
 * PLATFORM_ENCRYPTION_KEY, the same in every process), bound to one installation, expiring
 * after 10 minutes, and spent once (the log's database records each spent nonce, so every
 * API process refuses a replay):
 * - `connect`: a member of the installation's organization starts the connection; without
 *   it, anybody could open the public endpoint and bind their own provider account to an
 *   installation that is not theirs;
 * - `state`: what the provider carries back to the callback.
 */
export type OAuthTicketKind = 'connect' | 'state';
const LABEL: Record<OAuthTicketKind, string> = { connect: 'connection ticket', state: 'state' };

export class OAuthStates {
  private readonly key: Buffer;

  constructor(
    encryptionKey: string,
    private readonly db: Kysely<Schema>,
  ) {
    this.key = createHmac('sha256', Buffer.from(encryptionKey, 'base64')).update('oauth-states').digest();
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }

  issue(installationId: string, kind: OAuthTicketKind, now = Date.now()): string {
    const payload = Buffer.from(JSON.stringify({ k: kind, i: installationId, n: randomBytes(16).toString('base64url'), e: now + OAUTH_STATE_TTL_MS })).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** Spends a ticket of this kind for this installation; why it is refused, or undefined when it was good. */
  async spend(ticket: string, kind: OAuthTicketKind, installationId: string, now = Date.now()): Promise<string | undefined> {
    const [payload = '', mac = ''] = ticket.split('.');
    const what = LABEL[kind];
    const expected = Buffer.from(this.mac(payload));
    if (!payload || Buffer.from(mac).length !== expected.length || !timingSafeEqual(Buffer.from(mac), expected)) return `the ${what} is not one the platform issued`;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { k: OAuthTicketKind; i: string; n: string; e: number };
    if (claims.k !== kind) return `the ${what} is not one the platform issued`;
    if (claims.i !== installationId) return `the ${what} belongs to another installation`;
    if (claims.e < now) return `the ${what} expired; start the connection again`;
    const spent = await this.db.insertInto('oauth_states').values({ nonce: claims.n, installation_id: installationId, used_at: now }).onConflict((oc) => oc.column('nonce').doNothing()).returning('nonce').execute();
    return spent.length === 1 ? undefined : `the ${what} was used already; start the connection again`;
  }
}
