import type { Client } from '@temporalio/client';
import { assertEgressAllowList, egressGuard, platformPortsOf, webhookGuard } from '../net/guards';
import type { PlatformConfig } from '../config';
import type { DestinationGuard } from '../net/destination-guard';
import type { PlatformPorts } from '../net/platform-ports';
import type { Logger } from '../logger';
import type { Tracing } from '../tracing';
import type { StartedParts } from '../lifecycle';
import { connectClient } from '../temporal/client';
import { EncryptionCodec } from '../temporal/codec';
import { assertKeysOpen } from '../temporal/key-probe';
import { DIRECTORY_WORKFLOW_ID } from '../workflows/directory';
import { ReceiverStates } from '../ingest/receiver-states';
import { IngestService } from '../ingest/ingest-service';
import { ShardClient, type ShardLimits } from '../ingest/shard-client';
import { createIntegrationRuntime } from '../isolates';
import type { IntegrationRuntime } from '../isolates/integration-runtime';
import type { IsolatePool } from '../isolates/isolate-pool';
import { openStores, type PlatformStores } from './stores';

/** A process starting while its Temporal cluster (re)starts waits this long for it, then exits 1 for its orchestrator. */
const TEMPORAL_STARTUP_WAIT_MS = 60_000;

/** What a process is built from: where Temporal and the database are, and the limits every part reads. */
export interface PartsSettings {
  address: string;
  namespace: string;
  taskQueue: string;
  /** PLATFORM_ENCRYPTION_KEY: payloads, secrets at rest, installation tokens. */
  encryptionKey: string;
  /** PLATFORM_DECRYPTION_KEYS: older keys still opened during a rotation. */
  decryptionKeys?: readonly string[];
  databaseUrl: string;
  /** Delivery records link to the shard run in it. */
  temporalUiUrl?: string;
  baseUrl: string;
  /** Where isolates call the platform API (PLATFORM_INTERNAL_API_URL), when not baseUrl. */
  internalApiUrl?: string;
  platformPorts: PlatformPorts;
  /** Where webhook URLs may point. */
  webhookGuard: DestinationGuard;
  /** Where integration code may fetch. */
  egressGuard: DestinationGuard;
  maxIsolates?: number;
  deliveryShards: number;
  /** The delivery shards' limits (tests make them small; the defaults otherwise). */
  shardLimits?: ShardLimits;
  /** How long a receiver fails every attempt before its installation's new events are held (HOLD_AFTER_MS unless set; tests make it short). */
  holdAfterMs?: number;
  tracing?: Tracing;
  logger: Logger;
}

/** The parts the API and the worker of one process share: built once, stopped with the process. */
export interface PlatformParts {
  settings: PartsSettings;
  /** The payload codec of the process's client, worker and API: one set of keys, one record of keys it lacked. */
  codec: EncryptionCodec;
  client: Client;
  stores: PlatformStores;
  runtime: IntegrationRuntime;
  isolates: IsolatePool;
  /** The one ingest of the process: the API's events and replays, the worker's platform events and stranded sweeps. */
  ingest: IngestService;
}

/** The guards and ports of a process configured from the environment (tests build their own). */
export async function guardsOf(config: PlatformConfig): Promise<Pick<PartsSettings, 'platformPorts' | 'webhookGuard' | 'egressGuard'>> {
  const platformPorts = platformPortsOf(config);
  await assertEgressAllowList(config.egressAllow, platformPorts);
  return { platformPorts, webhookGuard: webhookGuard(config.allowPrivateTargets, platformPorts), egressGuard: egressGuard(config.egressAllow, platformPorts) };
}

/**
 * Builds the parts every role needs, each added to `started` so that a stop (or a failed
 * start) closes them, last built first: the isolates, the Temporal client, the stores.
 */
export async function buildParts(settings: PartsSettings, started: StartedParts): Promise<PlatformParts> {
  const { address, namespace, encryptionKey, decryptionKeys, tracing, logger } = settings;
  const codec = new EncryptionCodec(encryptionKey, decryptionKeys);
  // The database first: its trouble is said before any wait on Temporal.
  const stores = await started.add('the delivery log', await openStores({ url: settings.databaseUrl, encryptionKey, decryptionKeys, namespace, temporalUiUrl: settings.temporalUiUrl, logger }), (opened) => opened.close());
  const client = await started.add('the Temporal client', await connectClient({ address, namespace, codec, tracing, startupWaitMs: TEMPORAL_STARTUP_WAIT_MS, logger }), (connected) => connected.connection.close());
  await assertKeysOpen(client, namespace, DIRECTORY_WORKFLOW_ID, [encryptionKey, ...(decryptionKeys ?? [])]);
  const { runtime, pool } = createIntegrationRuntime({
    client,
    encryptionKey,
    baseUrl: settings.baseUrl,
    apiUrl: settings.internalApiUrl,
    egressGuard: settings.egressGuard,
    platformPorts: settings.platformPorts,
    maxProcesses: settings.maxIsolates,
    logger,
    stores,
  });
  const isolates = await started.add('the isolates', pool, (running) => running.close());
  const failing = new ReceiverStates((since) => stores.health.receiverStates(since), settings.holdAfterMs);
  const ingest = new IngestService(stores.events, stores.installations, new ShardClient(client, settings.taskQueue, settings.deliveryShards, settings.shardLimits), failing);
  return { settings, codec, client, stores, runtime, isolates, ingest };
}
