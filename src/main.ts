import path from 'node:path';
import { startApi } from './api/app';
import { DEFAULT_HTTP_LIMITS } from './api/http-server';
import { configFromEnv } from './config';
import { loadOrCreateSecrets } from './data-dir';
import { createLogger } from './logger';
import { findOrBuildTemporalCli } from './temporal/cli-binary';
import { connectClient } from './temporal/client';
import { SupervisedDevServer } from './temporal/supervised-dev-server';
import { installTemporalRuntime } from './temporal/runtime-logger';
import { createWorker } from './worker';
import { openStores } from './platform/stores';
import { runEntryPoint, type Heed } from './lifecycle';
import { assertEgressAllowList, egressGuard, platformPortsOf, webhookGuard } from './net/guards';
import { createIntegrationRuntime } from './isolates';
import { startTracing } from './tracing';

/**
 * `npm start`: the embedded default. Without TEMPORAL_ADDRESS it runs a Temporal dev
 * server on a SQLite file in the data directory (Web UI on, pointed at our codec
 * endpoint), then the worker and the API in this process.
 */
async function main(heed: Heed): Promise<void> {
  const config = configFromEnv();
  const logger = createLogger(config.logLevel);
  installTemporalRuntime(logger);
  // Ctrl-C, SIGTERM or the death of `npm start` stop what has started, last first, within
  // 10 s, whatever Temporal's state: during start-up too (building the Temporal CLI takes a
  // minute). On Linux the dev server, go and the isolates die with this process anyway.
  const started = heed(logger, () => process.stdout.write('Stopping…\n'));
  const tracing = startTracing({ url: config.otlpTracesUrl, serviceName: config.serviceName ?? 'integration-platform' });
  const generated = loadOrCreateSecrets(config.dataDir, config.encryptionKey);
  const adminToken = config.adminToken ?? generated.adminToken;
  const { encryptionKey } = generated;
  const embedded = !config.temporalAddress;
  const { allowPrivateTargets } = config;
  const platformPorts = platformPortsOf(config);
  await assertEgressAllowList(config.egressAllow, platformPorts);

  let devServer: SupervisedDevServer | undefined;
  if (embedded) {
    const cliPath = await findOrBuildTemporalCli(config.toolEnv);
    devServer = await started.add('the Temporal dev server', await SupervisedDevServer.start({
      cliPath,
      namespace: config.temporalNamespace,
      dbFile: path.join(config.dataDir, 'temporal.db'),
      port: config.devServerPort,
      ui: { port: config.devServerUiPort, codecEndpoint: `${config.baseUrl}/codec` },
      onLog: (line) => logger.debug({ component: 'temporal' }, line),
    }, logger), (server) => server.stop());
  }
  // Flushed after everything else has stopped, but before the dev server (which may take its whole 10 s).
  await started.add('tracing', tracing, (provider) => provider?.shutdown());
  const address = config.temporalAddress ?? devServer!.address;
  const settings = { address, namespace: config.temporalNamespace, encryptionKey, tracing };
  const client = await started.add('the Temporal client', await connectClient(settings), (connected) => connected.connection.close());
  const stores = await started.add('the delivery log', await openStores({ url: config.databaseUrl, encryptionKey, namespace: settings.namespace, temporalUiUrl: config.temporalUiUrl ?? devServer?.uiUrl, logger }), (opened) => opened.close());
  const webhooks = webhookGuard(allowPrivateTargets, platformPorts);
  const { runtime, pool } = createIntegrationRuntime({ client, encryptionKey, baseUrl: config.baseUrl, apiUrl: config.internalApiUrl, egressGuard: egressGuard(config.egressAllow, platformPorts), platformPorts, maxProcesses: config.isolateMaxProcesses, logger, stores });
  await started.add('the isolates', pool, (isolates) => isolates.close());
  const worker = await createWorker({ ...settings, taskQueue: config.taskQueue, client, stores, runtime, baseUrl: config.baseUrl, deliveryShards: config.deliveryShards, webhookGuard: webhooks, retentionDays: config.retentionDays, logger });
  const workerRun = worker.run();
  await started.add('the worker', worker, async (polling) => {
    // The SDK's runtime starts the worker's shutdown on SIGINT/SIGTERM by itself.
    if (polling.getState() === 'RUNNING') polling.shutdown();
    await workerRun;
  });
  const uiOrigins = devServer?.uiUrl ? [devServer.uiUrl, devServer.uiUrl.replace('127.0.0.1', 'localhost')] : [];
  await started.add('the API', await startApi(
    {
      client,
      taskQueue: config.taskQueue,
      baseUrl: config.baseUrl,
      adminToken,
      webhookGuard: webhooks,
      encryptionKey: encryptionKey,
      stores,
      runtime,
      deliveryShards: config.deliveryShards,
      logger,
      codecTrustsLoopback: true,
      httpLimits: { ...DEFAULT_HTTP_LIMITS, connectionsPerClient: config.maxConnectionsPerClient },
      codecCorsOrigins: [...config.codecCorsOrigins, ...uiOrigins],
      liveness: devServer?.liveness,
    },
    config.port,
  ), (listening) => listening.close());

  process.stdout.write(
    [
      '',
      `  API          ${config.baseUrl}`,
      `  Temporal UI  ${devServer?.uiUrl ?? '(external cluster: ' + address + ')'}`,
      `  Admin token  ${adminToken}`,
      `  Data         ${config.dataDir}${allowPrivateTargets ? '   (private webhook targets allowed)' : ''}`,
      '',
      '  Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
}

runEntryPoint('platform failed to start', main);
