import { Migrator, sql, type Kysely } from 'kysely';
import { quarantineCrossTenantDeliveries } from './quarantine';
import type { LogDialect } from './schema';
import { consoleEraMigrations, type DialectMigration } from './migrations-console-era';

/**
 * The log's schema, in order; never edit a migration that has shipped, add one. Types are
 * the portable subset: text, integer, bigint (SQLite reads both as INTEGER). A migration
 * with a step for one database only is given the dialect.
 */
const migrations: Record<string, DialectMigration> = {
  '0001-delivery-log': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('events')
        .addColumn('event_id', 'text', (c) => c.primaryKey())
        .addColumn('organization_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('delivery_ids', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('events_created').on('events').column('created_at').execute();

      await db.schema
        .createTable('deliveries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('installation_id', 'text', (c) => c.notNull())
        .addColumn('organization_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('url', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('reason', 'text')
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('replay_of', 'text')
        .addColumn('workflow_id', 'text')
        .addColumn('run_id', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('completed_at', 'bigint')
        .execute();
      // Lists are newest first by (created_at, id), within one installation or organization.
      await db.schema.createIndex('deliveries_installation').on('deliveries').columns(['installation_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('deliveries_installation_status').on('deliveries').columns(['installation_id', 'status', 'created_at', 'id']).execute();
      await db.schema.createIndex('deliveries_organization').on('deliveries').columns(['organization_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('deliveries_event').on('deliveries').column('event_id').execute();
      await db.schema.createIndex('deliveries_created').on('deliveries').column('created_at').execute();

      await db.schema
        .createTable('attempts')
        .addColumn('delivery_id', 'text', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('status_code', 'integer')
        .addColumn('error', 'text')
        .addColumn('error_message', 'text')
        .addColumn('response_body', 'text')
        .addColumn('next_delay_ms', 'integer')
        .addColumn('workflow_id', 'text', (c) => c.notNull())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('attempts_pk', ['delivery_id', 'attempt'])
        .execute();

      await db.schema
        .createTable('installations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('organization_id', 'text', (c) => c.notNull())
        .addColumn('integration', 'text', (c) => c.notNull())
        .addColumn('space_id', 'text')
        .addColumn('site_id', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('events', 'text', (c) => c.notNull())
        .addColumn('url', 'text')
        .addColumn('secrets', 'text', (c) => c.notNull())
        .addColumn('version', 'integer')
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('configuration', 'text', (c) => c.notNull())
        .addColumn('revision', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('installations_organization').on('installations').columns(['organization_id', 'status']).execute();

      await db.schema
        .createTable('oauth_states')
        .addColumn('nonce', 'text', (c) => c.primaryKey())
        .addColumn('installation_id', 'text', (c) => c.notNull())
        .addColumn('used_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0002-deliveries-by-status': {
    async up(db: Kysely<any>) {
      // The pending-retries gauge counts pending deliveries at every scrape.
      await db.schema.createIndex('deliveries_status').on('deliveries').columns(['status', 'attempts']).execute();
    },
  },
  '0003-lists-by-status-and-stranded-sweep': {
    // Created only if missing: on a large PostgreSQL log, build them first with CREATE INDEX CONCURRENTLY (docs/decisions/delivery-log.md).
    async up(db: Kysely<any>) {
      // An organization's deliveries of one status (failed ones, say) without reading its whole history.
      await db.schema.createIndex('deliveries_organization_status').ifNotExists().on('deliveries').columns(['organization_id', 'status', 'created_at', 'id']).execute();
      // Pending deliveries never attempted, oldest first (the stranded sweep); it serves the
      // pending-retries gauge as (status, attempts) did, which it replaces.
      await db.schema.createIndex('deliveries_pending_age').ifNotExists().on('deliveries').columns(['status', 'attempts', 'created_at', 'id']).execute();
      await db.schema.dropIndex('deliveries_status').ifExists().execute();
    },
  },
  '0004-quarantine-cross-tenant-deliveries': {
    async up(db: Kysely<any>) {
      // Each step may run again (SQLite runs a migration outside a transaction).
      await db.schema
        .createTable('quarantined_deliveries')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('installation_id', 'text', (c) => c.notNull())
        // The organization of the installation that was sent the event, and the event's own.
        .addColumn('organization_id', 'text', (c) => c.notNull())
        .addColumn('event_organization_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('quarantined_at', 'bigint', (c) => c.notNull())
        .execute();
      await quarantineCrossTenantDeliveries(db);
    },
  },
  '0005-directory': {
    // Organizations and users, read by every request's authentication without asking Temporal.
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('organizations')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('subdomain', 'text', (c) => c.notNull())
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('organizations_subdomain').ifNotExists().unique().on('organizations').column('subdomain').execute();
      await db.schema
        .createTable('users')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('token_hash', 'text', (c) => c.notNull())
        .addColumn('orgs', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('users_token_hash').ifNotExists().unique().on('users').column('token_hash').execute();
    },
  },
  '0006-attempts-in-flight': {
    // Each attempt is written before it goes out: a worker that dies before recording its answer leaves it here.
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('attempts_in_flight')
        .ifNotExists()
        .addColumn('delivery_id', 'text', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('workflow_id', 'text', (c) => c.notNull())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('attempts_in_flight_pk', ['delivery_id', 'attempt'])
        .execute();
    },
  },
  '0007-integration-logs': {
    // What integration code wrote to its console, for its authors: read by integration, newest first, and by installation.
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('integration_logs')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('integration', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('installation_id', 'text', (c) => c.notNull())
        .addColumn('organization_id', 'text', (c) => c.notNull())
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('level', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('event_id', 'text')
        .addColumn('trace_id', 'text')
        .addColumn('message', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('integration_logs_integration').ifNotExists().on('integration_logs').columns(['integration', 'time', 'id']).execute();
      await db.schema.createIndex('integration_logs_installation').ifNotExists().on('integration_logs').columns(['installation_id', 'time', 'id']).execute();
      await db.schema.createIndex('integration_logs_time').ifNotExists().on('integration_logs').column('time').execute();
    },
  },
  '0008-installation-versions': {
    // A publish moves an integration's installations to its new version, but the pinned ones.
    async up(db: Kysely<any>) {
      await db.schema.alterTable('installations').addColumn('pinned', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.createIndex('installations_integration').ifNotExists().on('installations').columns(['integration', 'id']).execute();
    },
  },
  '0009-integration-assets': {
    // Icons and previews by content hash, out of versions' workflow payloads (base64: portable text).
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('integration_assets')
        .ifNotExists()
        .addColumn('hash', 'text', (c) => c.primaryKey())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0010-endpoint-health-operations-and-pace': {
    // Installations paused by the platform say why, ordered ones say so; receivers' health; operations' progress; send slots.
    async up(db: Kysely<any>) {
      await db.schema.alterTable('installations').addColumn('pause', 'text').execute();
      await db.schema.alterTable('installations').addColumn('ordered', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('deliveries').addColumn('seq', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.createIndex('deliveries_line').on('deliveries').columns(['installation_id', 'created_at', 'seq', 'id']).where(sql.ref('status'), '=', 'pending').execute();
      await db.schema
        .createTable('installation_health')
        .addColumn('installation_id', 'text', (c) => c.primaryKey())
        .addColumn('consecutive_failures', 'integer', (c) => c.notNull())
        .addColumn('failing_since', 'bigint')
        .addColumn('last_success_at', 'bigint')
        .addColumn('last_failure_at', 'bigint')
        .addColumn('last_failure_status', 'integer')
        .addColumn('last_failure_error', 'text')
        .execute();
      await db.schema
        .createTable('operations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('organization_id', 'text', (c) => c.notNull())
        .addColumn('installation_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('total', 'integer', (c) => c.notNull())
        .addColumn('done', 'integer', (c) => c.notNull())
        .addColumn('failed', 'integer', (c) => c.notNull())
        .addColumn('request', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('finished_at', 'bigint')
        .execute();
      await db.schema
        .createTable('installation_pace')
        .addColumn('installation_id', 'text', (c) => c.primaryKey())
        .addColumn('next_at', 'bigint', (c) => c.notNull())
        .addColumn('held_until', 'bigint', (c) => c.notNull())
        .addColumn('slow_until', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  ...consoleEraMigrations,
};

/**
 * Brings the schema up to date; safe to run from several processes at once. Answers the
 * migrations this call applied (none when another process had). PostgreSQL's
 * migrator takes a lock; SQLite's has none, so a start that loses the race (its CREATE
 * finds the table) tries again once the winner has recorded the migration.
 */
export async function migrate(db: Kysely<any>, dialect: LogDialect, tries = 5): Promise<string[]> {
  const forDialect = Object.fromEntries(Object.entries(migrations).map(([name, migration]) => [name, typeof migration === 'function' ? migration(dialect) : migration]));
  const migrator = new Migrator({ db, provider: { getMigrations: async () => forDialect } });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    const failed = results?.find((result) => result.status === 'Error');
    if (!error && !failed) return (results ?? []).filter((result) => result.status === 'Success').map((result) => result.migrationName);
    if (attempt >= tries) throw new Error(`delivery log migration${failed ? ` ${failed.migrationName}` : ''} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
  }
}
