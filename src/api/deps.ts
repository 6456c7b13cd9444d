import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { EncryptionCodec } from '../temporal/codec';
import type { DestinationGuard } from '../net/destination-guard';
import type { DeliveryLogStores } from '../delivery-log';
import type { InstallationIndex } from '../delivery-log/installation-index';
import { IngestService } from '../ingest/ingest-service';
import { ShardClient } from '../ingest/shard-client';
import { DeliveryService } from './delivery-service';
import { KnownOrganizations } from './organizations';
import { PageTokens } from './page-tokens';

/** What the API is built from; `src/main.ts`, `src/api/main.ts` and the tests each provide it. */
export interface ApiSettings {
  client: Client;
  taskQueue: string;
  baseUrl: string;
  adminToken: string;
  /** Where webhook URLs may point (PLATFORM_ALLOW_PRIVATE_TARGETS, never the platform's ports). */
  webhookGuard: DestinationGuard;
  codec: EncryptionCodec;
  stores: DeliveryLogStores;
  /** PLATFORM_DELIVERY_SHARDS */
  deliveryShards: number;
  logger: Logger;
  /** The embedded default trusts loopback callers of the codec endpoint (its own UI); production asks for the token. */
  codecTrustsLoopback: boolean;
  /** Origins allowed to call the codec endpoint from a browser (the Temporal UI). */
  codecCorsOrigins: string[];
}

/** What routes use: the settings and the services built from them. */
export interface ApiDeps extends Omit<ApiSettings, 'stores' | 'deliveryShards'> {
  installations: InstallationIndex;
  ingest: IngestService;
  deliveries: DeliveryService;
  organizations: KnownOrganizations;
}

/** The one place the API's services are wired together. */
export function buildApiDeps({ stores, deliveryShards, ...settings }: ApiSettings): ApiDeps {
  const ingest = new IngestService(stores.log, stores.installations, new ShardClient(settings.client, settings.taskQueue, deliveryShards));
  return {
    ...settings,
    installations: stores.installations,
    ingest,
    deliveries: new DeliveryService(stores.log, ingest, new PageTokens(settings.adminToken)),
    organizations: new KnownOrganizations(settings.client),
  };
}
