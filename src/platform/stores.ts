import { Encryption } from '../encryption';
import { openLogDatabase } from '../delivery-log/database';
import type { Kysely } from 'kysely';
import type { Schema } from '../delivery-log/schema';
import { EventRecords } from '../delivery-log/event-records';
import { AttemptRecords } from '../delivery-log/attempt-records';
import { DeliveryReads } from '../delivery-log/delivery-reads';
import { LogSweeps } from '../delivery-log/log-sweeps';
import { InstallationIndex } from '../installations/read-model';
import { DirectoryIndex } from '../delivery-log/directory-index';
import { IntegrationLogStore } from '../delivery-log/integration-logs';
import { AssetStore } from '../delivery-log/asset-store';
import { OperationRecords } from '../delivery-log/operation-records';
import { ReceiverHealthReads } from '../delivery-log/health-reads';
import { ConsoleSessions } from '../delivery-log/console-sessions';
import { PaceRecords } from '../delivery-log/pace-records';
import { trackPendingRetries } from '../metrics';
import type { Logger } from '../logger';

export interface StoreOptions {
  /** PLATFORM_DATABASE_URL: `postgres://…` or `sqlite:<file>`. */
  url: string;
  encryptionKey: string;
  /** Older keys whose values are still opened (PLATFORM_DECRYPTION_KEYS). */
  decryptionKeys?: readonly string[];
  /** PLATFORM_TEMPORAL_UI_URL: delivery records link to the shard run in it. */
  temporalUiUrl?: string;
  namespace: string;
  /** Where the database's connection trouble is said. */
  logger?: Logger;
}

/** The database's stores, one per caller: ingest, attempt batches, the API's reads, the worker's sweeps, the read models. */
export interface PlatformStores {
  /** The database itself (OAuth states; tests' own looks). */
  db: Kysely<Schema>;
  events: EventRecords;
  attempts: AttemptRecords;
  deliveries: DeliveryReads;
  sweeps: LogSweeps;
  installations: InstallationIndex;
  directory: DirectoryIndex;
  integrationLogs: IntegrationLogStore;
  assets: AssetStore;
  operations: OperationRecords;
  health: ReceiverHealthReads;
  pace: PaceRecords;
  consoleSessions: ConsoleSessions;
  close(): Promise<void>;
}

/** The delivery log, the read models (installations, the directory) and integrations' logs, on one database, migrated. */
export async function openStores(options: StoreOptions): Promise<PlatformStores> {
  const database = await openLogDatabase(options.url, options.logger);
  const encryption = new Encryption(options.encryptionKey, options.decryptionKeys);
  const ui = options.temporalUiUrl?.replace(/\/+$/, '');
  const workflowUrl = (workflowId: string, runId: string) => (ui ? `${ui}/namespaces/${encodeURIComponent(options.namespace)}/workflows/${encodeURIComponent(workflowId)}/${runId}/history` : undefined);
  const deliveries = new DeliveryReads(database.db, encryption, workflowUrl);
  trackPendingRetries(() => deliveries.countRetrying());
  const installations = new InstallationIndex(database.db, encryption);
  const rederived = await installations.rederiveFlags().catch(async (err: unknown) => {
    await database.close();
    throw err;
  });
  if (rederived.changed) options.logger?.info({ installations: rederived.changed }, 'installations: flags derived from their configurations (migration 0017)');
  if (rederived.unopened.length) options.logger?.warn({ installations: rederived.unopened.length, ids: rederived.unopened.slice(0, 10) }, 'installations whose configuration no key opens keep their flags (PLATFORM_DECRYPTION_KEYS); tried again at the next start');
  return {
    db: database.db,
    events: new EventRecords(database.db, encryption),
    attempts: new AttemptRecords(database.db, encryption),
    deliveries,
    sweeps: new LogSweeps(database.db),
    installations,
    directory: new DirectoryIndex(database.db),
    integrationLogs: new IntegrationLogStore(database.db),
    assets: new AssetStore(database.db),
    operations: new OperationRecords(database.db),
    health: new ReceiverHealthReads(database.db),
    pace: new PaceRecords(database.db),
    consoleSessions: new ConsoleSessions(database.db, encryption),
    close: () => database.close(),
  };
}
