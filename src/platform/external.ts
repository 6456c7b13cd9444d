import { requireSetting, type PlatformConfig } from '../config';
import { createLogger } from '../logger';
import type { Heed, StartedParts } from '../lifecycle';
import { startTracing } from '../tracing';
import { installTemporalRuntime } from '../temporal/runtime-logger';
import { buildParts, guardsOf, type PlatformParts } from './parts';

/**
 * The start of a process of one role against an external Temporal cluster (docker-compose's
 * `api` and `worker`): logger, tracing and the shared parts, from the environment, which
 * must name the cluster and the key.
 */
export async function startExternal(config: PlatformConfig, heed: Heed, role: 'api' | 'worker'): Promise<{ parts: PlatformParts; started: StartedParts }> {
  const logger = createLogger(config.logLevel, role);
  installTemporalRuntime(logger);
  const started = heed(logger);
  const tracing = await started.add('tracing', startTracing({ url: config.otlpTracesUrl, serviceName: config.serviceName ?? `platform-${role}` }), (provider) => provider?.shutdown());
  const parts = await buildParts(
    {
      address: requireSetting(config, 'temporalAddress', 'TEMPORAL_ADDRESS'),
      namespace: config.temporalNamespace,
      taskQueue: config.taskQueue,
      encryptionKey: requireSetting(config, 'encryptionKey', 'PLATFORM_ENCRYPTION_KEY'),
      decryptionKeys: config.decryptionKeys,
      databaseUrl: config.databaseUrl,
      temporalUiUrl: config.temporalUiUrl,
      baseUrl: config.baseUrl,
      internalApiUrl: config.internalApiUrl,
      ...(await guardsOf(config)),
      maxIsolates: config.isolateMaxProcesses,
      deliveryShards: config.deliveryShards,
      tracing,
      logger,
    },
    started,
  );
  return { parts, started };
}
