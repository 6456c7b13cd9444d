import { DEFAULT_HTTP_LIMITS } from './http-server';
import { configFromEnv, requireSetting } from '../config';
import { createLogger } from '../logger';
import { connectClient } from '../temporal/client';
import { startApi } from './app';
import { openStores } from '../platform/stores';
import { runEntryPoint, type Heed } from '../lifecycle';
import { assertEgressAllowList, egressGuard, platformPortsOf, webhookGuard } from '../net/guards';
import { createIntegrationRuntime } from '../isolates';
import { startTracing } from '../tracing';
import { installTemporalRuntime } from '../temporal/runtime-logger';

/** `node dist/src/api/main.js`: the API alone, configured from the environment (docker-compose). */
async function main(heed: Heed): Promise<void> {
  const config = configFromEnv();
  const logger = createLogger(config.logLevel, 'api');
  installTemporalRuntime(logger, { worker: false });
  const started = heed(logger);
  const tracing = await started.add('tracing', startTracing({ url: config.otlpTracesUrl, serviceName: config.serviceName ?? 'platform-api' }), (provider) => provider?.shutdown());
  const platformPorts = platformPortsOf(config);
  await assertEgressAllowList(config.egressAllow, platformPorts);
  const encryptionKey = requireSetting(config, 'encryptionKey', 'PLATFORM_ENCRYPTION_KEY');
  const client = await started.add('the Temporal client', await connectClient({ address: requireSetting(config, 'temporalAddress', 'TEMPORAL_ADDRESS'), namespace: config.temporalNamespace, encryptionKey, tracing }), (connected) => connected.connection.close());
  const stores = await started.add('the delivery log', await openStores({ url: config.databaseUrl, encryptionKey, namespace: config.temporalNamespace, temporalUiUrl: config.temporalUiUrl, logger }), (opened) => opened.close());
  const { runtime, pool } = createIntegrationRuntime({ client, encryptionKey, baseUrl: config.baseUrl, apiUrl: config.internalApiUrl, egressGuard: egressGuard(config.egressAllow, platformPorts), platformPorts, maxProcesses: config.isolateMaxProcesses, logger, stores });
  await started.add('the isolates', pool, (isolates) => isolates.close());
  await started.add('the API', await startApi(
    {
      client,
      taskQueue: config.taskQueue,
      baseUrl: config.baseUrl,
      adminToken: requireSetting(config, 'adminToken', 'PLATFORM_ADMIN_TOKEN'),
      webhookGuard: webhookGuard(config.allowPrivateTargets, platformPorts),
      encryptionKey,
      stores,
      runtime,
      deliveryShards: config.deliveryShards,
      logger,
      codecTrustsLoopback: false,
      httpLimits: { ...DEFAULT_HTTP_LIMITS, connectionsPerClient: config.maxConnectionsPerClient },
      codecCorsOrigins: config.codecCorsOrigins,
    },
    config.port,
  ), (listening) => listening.close());
  logger.info({ url: config.baseUrl }, 'api listening');
}

runEntryPoint('api failed to start', main);
