import type { Kysely, Selectable } from 'kysely';
import type { Encryption } from '../encryption';
import { maskCredentials } from './configuration';
import { deliversInOrder, holdsWhileFailing } from './webhook';
import type { InstallationsTable, Schema } from '../delivery-log/schema';
import { LISTED_INSTALLATION_STATUSES, type InstallationPause, type InstallationProjection, type InstallationStatus, type InstallationSummary, type SigningSecret } from './types';

/** Opened values kept per process: two an installation. */
const MAX_OPENED = 20_000;

/** sealed_rederivations' row for the installations' flags (migration 0017). */
const INSTALLATION_FLAGS = 'installation_flags';
/** Installations read at a time when their flags are derived again. */
const REDERIVE_PAGE = 500;

/**
 * The installations' read model in the log's database. Each installation workflow writes
 * its own row before a change answers, so fan-out and attempts, which read it in every
 * API and worker process, see a change as soon as its caller does; no cache, no query of
 * a workflow per event. Secrets are sealed at rest.
 */
export class InstallationIndex {
  /**
   * Sealed values opened, by their sealed text (a change seals afresh, so an entry is never
   * stale): every attempt batch reads its installations, and opening their secrets and
   * configuration each time was 5% of the process's time beside 200 failing receivers.
   */
  private readonly opened = new Map<string, string>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly encryption: Encryption,
  ) {}

  private open(sealed: string): string {
    let plain = this.opened.get(sealed);
    if (plain === undefined) {
      plain = this.encryption.open(sealed);
      if (this.opened.size >= MAX_OPENED) this.opened.clear();
      this.opened.set(sealed, plain);
    }
    return plain;
  }

  /** The database answers (readiness). */
  async ping(): Promise<void> {
    await this.db.selectFrom('installations').select('id').limit(1).execute();
  }

  /** Keeps the newest revision: a late write of an older one changes nothing. */
  async save(installation: InstallationProjection): Promise<void> {
    const row = {
      id: installation.id,
      organization_id: installation.target.org,
      integration: installation.integration,
      space_id: installation.target.space ?? null,
      site_id: installation.target.site ?? null,
      status: installation.status,
      events: JSON.stringify(installation.events),
      url: installation.url ?? null,
      secrets: this.encryption.seal(JSON.stringify(installation.signingSecrets)),
      version: installation.version ?? null,
      pinned: installation.pinned ? 1 : 0,
      scopes: JSON.stringify(installation.scopes),
      configuration: this.encryption.seal(JSON.stringify(installation.configuration)),
      revision: installation.revision,
      created_at: Date.parse(installation.createdAt),
      updated_at: Date.parse(installation.updatedAt),
      pause: installation.pause ? JSON.stringify(installation.pause) : null,
      ...flagsOf(installation),
    };
    await this.db
      .insertInto('installations')
      .values(row)
      .onConflict((oc) =>
        oc
          .column('id')
          .doUpdateSet((eb) => ({
            status: eb.ref('excluded.status'),
            events: eb.ref('excluded.events'),
            url: eb.ref('excluded.url'),
            secrets: eb.ref('excluded.secrets'),
            configuration: eb.ref('excluded.configuration'),
            version: eb.ref('excluded.version'),
            pinned: eb.ref('excluded.pinned'),
            scopes: eb.ref('excluded.scopes'),
            revision: eb.ref('excluded.revision'),
            updated_at: eb.ref('excluded.updated_at'),
            pause: eb.ref('excluded.pause'),
            ordered: eb.ref('excluded.ordered'),
            holds_while_failing: eb.ref('excluded.holds_while_failing'),
          }))
          .where('installations.revision', '<', (eb) => eb.ref('excluded.revision')),
      )
      .execute();
  }

  /**
   * Derives every installation's flags from its configuration, once, where a migration could
   * not (it has no key: see migration 0017). Run at each start: the first process to start
   * does it and deletes the migration's row; processes starting together do it twice, to the
   * same end. A later change of an installation wrote its flags itself, and is not touched.
   * One whose configuration none of the keys opens keeps its flags, and the row stays for
   * the next start (with the older key in PLATFORM_DECRYPTION_KEYS). Answers how many
   * installations it changed, and those it could not open.
   */
  async rederiveFlags(): Promise<{ changed: number; unopened: string[] }> {
    const due = await this.db.selectFrom('sealed_rederivations').select('name').where('name', '=', INSTALLATION_FLAGS).executeTakeFirst();
    if (!due) return { changed: 0, unopened: [] };
    let changed = 0;
    const unopened: string[] = [];
    for (let after = ''; ; ) {
      // Deleted ones are left as they are: nothing is delivered to them, and an old key may be gone with them.
      const rows = await this.db.selectFrom('installations').select(['id', 'integration', 'configuration', 'revision', 'ordered', 'holds_while_failing']).where('id', '>', after).where('status', '!=', 'deleted').orderBy('id').limit(REDERIVE_PAGE).execute();
      if (rows.length === 0) break;
      for (const row of rows) {
        let flags: ReturnType<typeof flagsOf>;
        try {
          flags = flagsOf({ integration: row.integration, configuration: JSON.parse(this.open(row.configuration)) as Record<string, unknown> });
        } catch {
          unopened.push(row.id);
          continue;
        }
        if (flags.ordered === Number(row.ordered) && flags.holds_while_failing === Number(row.holds_while_failing)) continue;
        const { numUpdatedRows } = await this.db.updateTable('installations').set(flags).where('id', '=', row.id).where('revision', '=', row.revision).executeTakeFirst();
        changed += Number(numUpdatedRows);
      }
      after = rows.at(-1)!.id;
    }
    if (unopened.length === 0) await this.db.deleteFrom('sealed_rederivations').where('name', '=', INSTALLATION_FLAGS).execute();
    return { changed, unopened };
  }

  /** The organizations' installations that are not deleted, oldest first. */
  async of(orgs: string[], statuses: readonly InstallationStatus[] = LISTED_INSTALLATION_STATUSES): Promise<InstallationSummary[]> {
    if (orgs.length === 0) return [];
    const rows = await this.db.selectFrom('installations').selectAll().where('organization_id', 'in', orgs).where('status', 'in', statuses).orderBy('created_at').orderBy('id').execute();
    return rows.map(summaryOf);
  }

  /** Listings: summaries with the configuration as people see it (credentials masked). */
  async list(orgs: string[]): Promise<(InstallationSummary & { configuration: Record<string, unknown> })[]> {
    if (orgs.length === 0) return [];
    const rows = await this.db.selectFrom('installations').selectAll().where('organization_id', 'in', orgs).where('status', '!=', 'deleted').orderBy('created_at').orderBy('id').execute();
    return rows.map((row) => ({ ...summaryOf(row), configuration: maskCredentials(JSON.parse(this.open(row.configuration)) as Record<string, unknown>) }));
  }

  /** Of these installations, those whose deliveries go through their ordered line (not deleted). */
  async orderedAmong(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.selectFrom('installations').select('id').where('id', 'in', ids).where('ordered', '=', 1).where('status', '!=', 'deleted').execute();
    return new Set(rows.map((row) => row.id));
  }

  /** Ids of an integration's installations that are not deleted, by id, after `after`: a rollout's pages. */
  async idsOf(integration: string, after: string | undefined, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('installations')
      .select('id')
      .where('integration', '=', integration)
      .where('status', '!=', 'deleted')
      .$if(after !== undefined, (q) => q.where('id', '>', after!))
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((row) => row.id);
  }

  /** One installation as stored (deleted ones too: their status says so). */
  async get(id: string): Promise<InstallationProjection | undefined> {
    return (await this.getMany([id])).get(id);
  }

  /** Installations as stored, by id (an attempt batch's, in one read). */
  async getMany(ids: string[]): Promise<Map<string, InstallationProjection>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.selectFrom('installations').selectAll().where('id', 'in', ids).execute();
    return new Map(
      rows.map((row) => [
        row.id,
        {
          ...summaryOf(row),
          signingSecrets: JSON.parse(this.open(row.secrets)) as SigningSecret[],
          ...(row.version !== null && { version: row.version }),
          ...(Number(row.pinned) === 1 && { pinned: true }),
          scopes: JSON.parse(row.scopes) as string[],
          configuration: JSON.parse(this.open(row.configuration)) as Record<string, unknown>,
          updatedAt: new Date(Number(row.updated_at)).toISOString(),
        },
      ]),
    );
  }
}

/** The columns derived from an installation's configuration, which the log's queries select on. */
function flagsOf(installation: { integration: string; configuration: Record<string, unknown> }) {
  return { ordered: deliversInOrder(installation) ? 1 : 0, holds_while_failing: holdsWhileFailing(installation) ? 1 : 0 };
}

function summaryOf(row: Selectable<InstallationsTable>): InstallationSummary {
  return {
    id: row.id,
    integration: row.integration,
    ...(row.version !== null && { version: Number(row.version) }),
    ...(Number(row.pinned) === 1 && { pinned: true as const }),
    target: { org: row.organization_id, ...(row.space_id !== null && { space: row.space_id }), ...(row.site_id !== null && { site: row.site_id }) },
    status: row.status as InstallationStatus,
    events: JSON.parse(row.events) as string[],
    ...(row.url !== null && { url: row.url }),
    createdAt: new Date(row.created_at).toISOString(),
    revision: row.revision,
    ...(row.pause !== null && { pause: JSON.parse(row.pause) as InstallationPause }),
    ...(Number(row.ordered) === 1 && { ordered: true as const }),
    ...(Number(row.holds_while_failing) === 1 && { holdsWhileFailing: true as const }),
  };
}
