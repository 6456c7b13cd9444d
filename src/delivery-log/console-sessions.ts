import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Encryption } from '../encryption';
import type { Schema } from './schema';

/** How long a console sign-in lasts. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export interface ConsoleSession {
  /** The bearer token it acts with: what the API lets that token do, and nothing else. */
  token: string;
  /** What every state-changing request of the session carries in `X-CSRF-Token`. */
  csrf: string;
  expiresAt: number;
}

const hashOf = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/**
 * The web console's sessions, in the log's database so that every API process knows them
 * and a sign-out ends one everywhere. The cookie holds a random secret; the database only
 * its hash, and the token sealed. Expired ones are purged with the log.
 */
export class ConsoleSessions {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly encryption: Encryption,
  ) {}

  /** A new session for a token already checked: answers its cookie secret and CSRF token. */
  async begin(token: string, now = Date.now()): Promise<{ secret: string; csrf: string; expiresAt: number }> {
    const secret = randomBytes(32).toString('base64url');
    const csrf = randomBytes(24).toString('base64url');
    const expiresAt = now + SESSION_TTL_MS;
    await this.db.insertInto('console_sessions').values({ id_hash: hashOf(secret), token: this.encryption.seal(token), csrf, created_at: now, expires_at: expiresAt }).execute();
    return { secret, csrf, expiresAt };
  }

  /** The session a cookie secret names, unless it ended or expired. */
  async find(secret: string, now = Date.now()): Promise<ConsoleSession | undefined> {
    const row = await this.db.selectFrom('console_sessions').selectAll().where('id_hash', '=', hashOf(secret)).executeTakeFirst();
    if (!row || Number(row.expires_at) <= now) return undefined;
    return { token: this.encryption.open(row.token), csrf: row.csrf, expiresAt: Number(row.expires_at) };
  }

  async end(secret: string): Promise<void> {
    await this.db.deleteFrom('console_sessions').where('id_hash', '=', hashOf(secret)).execute();
  }

  /** Removes sessions expired before `before`; answers how many. */
  async purge(before: number): Promise<number> {
    const result = await this.db.deleteFrom('console_sessions').where('expires_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
