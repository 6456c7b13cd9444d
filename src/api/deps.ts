import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { Liveness } from '../temporal/supervised-dev-server';
import type { HttpLimits } from './http-server';
import type { EncryptionCodec } from '../temporal/codec';
import type { DestinationGuard } from '../net/destination-guard';
import type { Kysely } from 'kysely';
import type { Schema } from '../delivery-log/schema';
import type { DeliveryReads } from '../delivery-log/delivery-reads';
import type { EventRecords } from '../delivery-log/event-records';
import type { InstallationIndex } from '../installations/read-model';
import type { DirectoryIndex } from '../delivery-log/directory-index';
import type { IngestService } from '../ingest/ingest-service';
import { DeliveryService } from './delivery-service';
import type { IntegrationLogStore } from '../delivery-log/integration-logs';
import type { AssetStore } from '../delivery-log/asset-store';
import { KnownOrganizations } from './organizations';
import { OAuthStates } from '../delivery-log/oauth-states';
import { PageTokens } from './page-tokens';
import type { IntegrationRuntime } from '../isolates/integration-runtime';
import { InstallationTokens } from '../integrations/installation-tokens';
import type { OperationRecords } from '../delivery-log/operation-records';
import type { ReceiverHealthReads } from '../delivery-log/health-reads';
import { OperationService } from './operation-service';
import type { ConsoleSessions } from '../delivery-log/console-sessions';
import { PortalLinks } from './portal-links';

/** The stores the API reads and writes, opened by the process (src/platform/stores.ts). */
export interface ApiStores {
  db: Kysely<Schema>;
  events: EventRecords;
  deliveries: DeliveryReads;
  installations: InstallationIndex;
  directory: DirectoryIndex;
  integrationLogs: IntegrationLogStore;
  assets: AssetStore;
  operations: OperationRecords;
  health: ReceiverHealthReads;
  consoleSessions: ConsoleSessions;
}

/** What the API is built from: the process's parts (src/platform/parts.ts) and the API's own settings. */
export interface ApiSettings {
  client: Client;
  taskQueue: string;
  baseUrl: string;
  adminToken: string;
  /** Where webhook URLs may point (PLATFORM_ALLOW_PRIVATE_TARGETS, never the platform's ports). */
  webhookGuard: DestinationGuard;
  /** PLATFORM_ENCRYPTION_KEY: the installation tokens' and OAuth states' root. */
  encryptionKey: string;
  /** The process's payload codec: what readiness asks about keys; the codec endpoint uses its keys without recording. */
  codec: EncryptionCodec;
  stores: ApiStores;
  /** Calls into integration code (isolates). */
  runtime: IntegrationRuntime;
  /** The process's ingest (shared with its worker). */
  ingest: IngestService;
  logger: Logger;
  /** The embedded default trusts loopback callers of the codec endpoint (its own UI); production asks for the token. */
  codecTrustsLoopback: boolean;
  /** Origins allowed to call the codec endpoint from a browser (the Temporal UI). */
  codecCorsOrigins: string[];
  /** Whether the process can still recover by itself (the embedded default's supervised dev server); /livez fails once it cannot. */
  liveness?: Liveness;
  /** Slow clients and connections per address (DEFAULT_HTTP_LIMITS unless set). */
  httpLimits?: HttpLimits;
}

/** What routes use: the settings and the services built from them. */
export interface ApiDeps extends Omit<ApiSettings, 'stores' | 'encryptionKey' | 'httpLimits'> {
  installationTokens: InstallationTokens;
  installations: InstallationIndex;
  directory: DirectoryIndex;
  ingest: IngestService;
  deliveries: DeliveryService;
  /** Integration code's log lines, read by the integration's owners. */
  integrationLogs: IntegrationLogStore;
  /** Integrations' images by hash. */
  assets: AssetStore;
  pageTokens: PageTokens;
  organizations: KnownOrganizations;
  oauthStates: OAuthStates;
  /** Background operations: started, read and cancelled. */
  operations: OperationService;
  health: ReceiverHealthReads;
  /** The web console's sign-ins. */
  consoleSessions: ConsoleSessions;
  /** The delivery portal's signed links. */
  portalLinks: PortalLinks;
}

/** The one place the API's services are wired together. */
export function buildApiDeps({ stores, encryptionKey, httpLimits: _limits, ...settings }: ApiSettings): ApiDeps {
  const { ingest } = settings;
  const pageTokens = new PageTokens(settings.adminToken);
  return {
    ...settings,
    installationTokens: new InstallationTokens(encryptionKey),
    installations: stores.installations,
    directory: stores.directory,
    deliveries: new DeliveryService(stores.deliveries, stores.events, ingest, pageTokens, settings.logger),
    integrationLogs: stores.integrationLogs,
    assets: stores.assets,
    pageTokens,
    organizations: new KnownOrganizations(stores.directory),
    oauthStates: new OAuthStates(encryptionKey, stores.db),
    operations: new OperationService(settings.client, settings.taskQueue, stores.operations),
    health: stores.health,
    consoleSessions: stores.consoleSessions,
    portalLinks: new PortalLinks(encryptionKey),
  };
}
