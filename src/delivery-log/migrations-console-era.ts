import { sql, type Kysely, type Migration } from 'kysely';
import type { LogDialect } from './schema';

/** A migration, or one that is given the dialect for a step of one database only. */
export type DialectMigration = Migration | ((dialect: LogDialect) => Migration);

/** The log's migrations from the web console on (see migrations.ts: never edit one that has shipped, add one). */
export const consoleEraMigrations: Record<string, DialectMigration> = {
  '0011-console-sessions': {
    // The web console's sign-ins: a session by the hash of its cookie, the token it acts with sealed.
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('console_sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('token', 'text', (c) => c.notNull())
        .addColumn('csrf', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0012-deliveries-by-organization-and-event-type': (dialect) => ({
    // An organization's deliveries of one event type, newest first, without reading its whole history.
    // Created only if missing, as 0003's: on a large PostgreSQL log, build it first with CREATE INDEX CONCURRENTLY.
    async up(db: Kysely<any>) {
      await db.schema.createIndex('deliveries_organization_event_type').ifNotExists().on('deliveries').columns(['organization_id', 'event_type', 'created_at', 'id']).execute();
      // PostgreSQL takes an organization, a status and an event type for independent: a type the
      // organization never had, common in others, looked common in it, and a list of it with a
      // status read every delivery of that status of the organization (bench (q)). Statistics of
      // the three together (kept by ANALYZE) show it the narrowest index. SQLite reads each index's own figures.
      if (dialect === 'postgres') await sql`CREATE STATISTICS IF NOT EXISTS deliveries_organization_mix ON organization_id, status, event_type FROM deliveries`.execute(db);
    },
  }),
  '0013-organization-portal-frame-ancestors': {
    // The sites an organization lets frame its delivery portal links (JSON array of origins; none when null).
    async up(db: Kysely<any>) {
      await db.schema.alterTable('organizations').addColumn('portal_frame_ancestors', 'text').execute();
    },
  },
  '0014-receivers-failing-now': {
    // How an installation's receiver failed the last attempts it was sent ('slow': timed out; 'fast': refused, 5xx, 429), null once it answers: delivery shards of later epochs batch such receivers together from their first attempt.
    async up(db: Kysely<any>) {
      await db.schema.alterTable('installation_health').addColumn('failing_now', 'text').execute();
      await db.schema.createIndex('installation_health_failing_now').on('installation_health').column('installation_id').where(sql.ref('failing_now'), 'is not', null).execute();
    },
  },
  '0015-receivers-state-written-at': {
    // When an installation's `failing_now` (now also 'prompt': it answered within 500 ms) was last written: API processes read what changed since their last read, not every receiver's each second.
    async up(db: Kysely<any>) {
      await db.schema.alterTable('installation_health').addColumn('failing_now_at', 'bigint').execute();
      await db.schema.createIndex('installation_health_failing_now_at').on('installation_health').column('failing_now_at').execute();
    },
  },
  '0016-receivers-failing-from-and-holds': {
    // When a receiver began failing (kept while it goes on failing, null once it answers), and
    // which installations' new events are held while it has failed long enough (webhooks not
    // ordered and not opted out of auto-pause; the configuration is sealed, so existing ones
    // start with the default, on, until 0017's derivation).
    async up(db: Kysely<any>) {
      await db.schema.alterTable('installation_health').addColumn('failing_now_from', 'bigint').execute();
      await db.schema.alterTable('installations').addColumn('holds_while_failing', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.updateTable('installations').set({ holds_while_failing: 1 }).where('integration', '=', 'webhook').where('ordered', '=', 0).execute();
    },
  },
  '0017-flags-from-sealed-configurations': {
    // What 0016 could not read: the first process to start with the key derives every
    // installation's flags from its configuration (see InstallationIndex.rederiveFlags), then
    // deletes this row. One opted out of auto-pause held its new events until then.
    async up(db: Kysely<any>) {
      await db.schema.createTable('sealed_rederivations').addColumn('name', 'text', (c) => c.primaryKey()).execute();
      await db.insertInto('sealed_rederivations').values({ name: 'installation_flags' }).execute();
    },
  },
  '0018-pace-in-microseconds': {
    // Send slots in µs: in whole ms, a pace whose interval is not one (300/s: 3.33 ms) was
    // rounded (333/s). A new column, not a change of next_at, so that processes of the
    // version before keep theirs during a rolling upgrade (the two then pace apart).
    async up(db: Kysely<any>) {
      await db.schema.alterTable('installation_pace').addColumn('next_at_us', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
    },
  },
  '0019-line-numbers': {
    // An ordered line goes by numbers its deliveries take from their installation's counter
    // as they are recorded, in the order the recordings commit, not by the recorders' clocks
    // (which let two recorders' deliveries go out of the order they committed in). Rows
    // recorded before keep 0, so they go first, in their order before. The index is built
    // before the one it replaces is dropped (a drop locks the table until the migration
    // commits); it is over the column added here, so it cannot be built beforehand.
    async up(db: Kysely<any>) {
      await db.schema.createTable('installation_lines').addColumn('installation_id', 'text', (c) => c.primaryKey()).addColumn('last_no', 'bigint', (c) => c.notNull()).execute();
      await db.schema.alterTable('deliveries').addColumn('line_no', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.createIndex('deliveries_line_no').ifNotExists().on('deliveries').columns(['installation_id', 'line_no', 'created_at', 'seq', 'id']).where(sql.ref('status'), '=', 'pending').execute();
      await db.schema.dropIndex('deliveries_line').ifExists().execute();
    },
  },
};
