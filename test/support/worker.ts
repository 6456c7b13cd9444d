import { StartedParts } from '../../src/lifecycle';
import { egressGuard, webhookGuard } from '../../src/net/guards';
import { buildParts, type PartsSettings, type PlatformParts } from '../../src/platform/parts';
import { startWorkerRole } from '../../src/platform/roles';
import { DELIVERY_SHARDS, testSettings } from './settings';

export type TestPartsOptions = Pick<PartsSettings, 'namespace' | 'taskQueue' | 'databaseUrl' | 'baseUrl' | 'platformPorts' | 'logger'> & Partial<Pick<PartsSettings, 'webhookGuard' | 'egressGuard' | 'tracing' | 'shardLimits' | 'holdAfterMs' | 'maxIsolates'>>;

/**
 * A test process's parts, built by the platform's own composition root against the run's
 * dev server: webhooks may go to private targets and integration code nowhere, unless
 * the test gives guards.
 */
export function buildTestParts(options: TestPartsOptions, started: StartedParts): Promise<PlatformParts> {
  const { address, encryptionKey } = testSettings();
  return buildParts({ address, encryptionKey, deliveryShards: DELIVERY_SHARDS, webhookGuard: webhookGuard(true, options.platformPorts), egressGuard: egressGuard([], options.platformPorts), ...options }, started);
}

/** The one way tests run a worker: on a test process's parts, with the bundle the build made (the traced one when the parts trace), as the platform's workers load it. */
export function startTestWorker(parts: PlatformParts, started: StartedParts, attemptTimeoutMs?: number) {
  return startWorkerRole(parts, started, { retentionDays: 30, attemptTimeoutMs });
}
