import type { Kysely } from 'kysely';
import type { Schema } from './schema';

export interface Organization {
  id: string;
  subdomain: string;
  title: string;
  createdAt: string;
  /** Origins whose pages may frame its delivery portal links (CSP frame-ancestors); none when absent. */
  portalFrameAncestors?: string[];
}

export interface DirectoryUser {
  id: string;
  orgs: string[];
  tokenHash: string;
  createdAt: string;
}

/** Who a bearer token is. */
export interface Principal {
  userId: string;
  orgs: string[];
}

/**
 * The directory's read model (organizations and users) in the log's database. The
 * directory workflow writes each entry before its creation answers; every request's
 * authentication and every organization lookup read it here, so they work while Temporal
 * is away and never wait on a workflow.
 */
export class DirectoryIndex {
  constructor(private readonly db: Kysely<Schema>) {}

  /** Entries are never changed once created: a write again (a retried activity) changes nothing. */
  async save(entries: { orgs?: Organization[]; users?: DirectoryUser[] }): Promise<void> {
    const orgs = entries.orgs ?? [];
    const users = entries.users ?? [];
    if (orgs.length) {
      await this.db
        .insertInto('organizations')
        .values(orgs.map((org) => ({ id: org.id, subdomain: org.subdomain, title: org.title, created_at: Date.parse(org.createdAt), portal_frame_ancestors: org.portalFrameAncestors?.length ? JSON.stringify(org.portalFrameAncestors) : null })))
        // Its settings are the workflow's latest (written again after each change); the rest never changes.
        .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ portal_frame_ancestors: eb.ref('excluded.portal_frame_ancestors') })))
        .execute();
    }
    if (users.length) {
      await this.db
        .insertInto('users')
        .values(users.map((user) => ({ id: user.id, token_hash: user.tokenHash, orgs: JSON.stringify(user.orgs), created_at: Date.parse(user.createdAt) })))
        .onConflict((oc) => oc.doNothing())
        .execute();
    }
  }

  /** Whether organizations or users are missing altogether: a directory from before the read model, to be filled from its workflow. */
  async lacksEntries(): Promise<boolean> {
    const [org, user] = await Promise.all([this.db.selectFrom('organizations').select('id').limit(1).executeTakeFirst(), this.db.selectFrom('users').select('id').limit(1).executeTakeFirst()]);
    return !org || !user;
  }

  /** An organization by id or subdomain. */
  async organization(key: string): Promise<Organization | undefined> {
    const row = await this.db.selectFrom('organizations').selectAll().where((eb) => eb.or([eb('id', '=', key), eb('subdomain', '=', key)])).limit(1).executeTakeFirst();
    return row && { id: row.id, subdomain: row.subdomain, title: row.title, createdAt: new Date(Number(row.created_at)).toISOString(), ...(row.portal_frame_ancestors !== null && { portalFrameAncestors: JSON.parse(row.portal_frame_ancestors) as string[] }) };
  }

  async principal(tokenHash: string): Promise<Principal | undefined> {
    const row = await this.db.selectFrom('users').select(['id', 'orgs']).where('token_hash', '=', tokenHash).executeTakeFirst();
    return row && { userId: row.id, orgs: JSON.parse(row.orgs) as string[] };
  }
}
