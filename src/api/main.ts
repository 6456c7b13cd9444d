import { configFromEnv, requireSetting } from '../config';
import { createLogger } from '../logger';
import { connectClient } from '../temporal/client';
import { startApi } from './app';
import { openDeliveryLog } from '../delivery-log';
import { stopOnSignals } from '../lifecycle';
import { assertEgressAllowList, egressGuard, platformPortsOf, webhookGuard } from '../net/guards';
import { createIntegrationRuntime } from '../isolates';
import { startTracing } from '../tracing';
import { installTemporalRuntime } from '../temporal/runtime-logger';

/** `node dist/src/api/main.js`: the API alone, configured from the environment (docker-compose). */
async function main(): Promise<void> {
  const config = configFromEnv();
  const logger = createLogger(config.logLevel, 'api');
  installTemporalRuntime(logger, { worker: false });
  const tracing = startTracing({ url: config.otlpTracesUrl, serviceName: config.serviceName ?? 'platform-api' });
  const platformPorts = platformPortsOf(config);
  await assertEgressAllowList(config.egressAllow, platformPorts);
  const encryptionKey = requireSetting(config, 'encryptionKey', 'PLATFORM_ENCRYPTION_KEY');
  const client = await connectClient({ address: requireSetting(config, 'temporalAddress', 'TEMPORAL_ADDRESS'), namespace: config.temporalNamespace, encryptionKey, tracing });
  const stores = await openDeliveryLog({ url: config.databaseUrl, encryptionKey, namespace: config.temporalNamespace, temporalUiUrl: config.temporalUiUrl, logger });
  const { runtime, pool } = createIntegrationRuntime({ client, encryptionKey, baseUrl: config.baseUrl, apiUrl: config.internalApiUrl, egressGuard: egressGuard(config.egressAllow, platformPorts), platformPorts });
  const api = await startApi(
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
      codecCorsOrigins: config.codecCorsOrigins,
    },
    config.port,
  );
  logger.info({ url: config.baseUrl }, 'api listening');
  stopOnSignals(async () => {
    await api.close();
    await Promise.all([client.connection.close(), pool.close()]);
    await Promise.all([stores.close(), tracing?.shutdown()]);
  }, logger);
}

main().catch((err) => {
  process.stderr.write(`api failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
