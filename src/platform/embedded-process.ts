import path from 'node:path';
import { DEFAULT_HTTP_LIMITS } from '../api/http-server';
import { configFromEnv } from '../config';
import { loadOrCreateSecrets } from '../data-dir';
import { createLogger } from '../logger';
import type { Heed } from '../lifecycle';
import { findOrBuildTemporalCli } from '../temporal/cli-binary';
import { SupervisedDevServer } from '../temporal/supervised-dev-server';
import { installTemporalRuntime } from '../temporal/runtime-logger';
import { startTracing } from '../tracing';
import { buildParts, guardsOf } from './parts';
import { startApiRole, startWorkerRole } from './roles';

/**
 * `npm start`: the embedded default. Without TEMPORAL_ADDRESS it runs a Temporal dev
 * server on a SQLite file in the data directory (Web UI on, pointed at our codec
 * endpoint), then the worker and the API in this process, on one set of parts.
 */
export async function runEmbeddedProcess(heed: Heed): Promise<void> {
  const config = configFromEnv();
  const logger = createLogger(config.logLevel);
  installTemporalRuntime(logger);
  // Ctrl-C, SIGTERM or the death of `npm start` stop what has started, last first, within
  // 10 s, whatever Temporal's state: during start-up too (building the Temporal CLI takes a
  // minute). On Linux the dev server, go and the isolates die with this process anyway.
  const started = heed(logger, () => process.stdout.write('Stopping…\n'));
  const tracing = startTracing({ url: config.otlpTracesUrl, serviceName: config.serviceName ?? 'integration-platform' });
  const generated = loadOrCreateSecrets(config.dataDir, config.encryptionKey, config.decryptionKeys);
  const adminToken = config.adminToken ?? generated.adminToken;
  const guards = await guardsOf(config);

  let devServer: SupervisedDevServer | undefined;
  if (!config.temporalAddress) {
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
  const parts = await buildParts(
    {
      address,
      namespace: config.temporalNamespace,
      taskQueue: config.taskQueue,
      encryptionKey: generated.encryptionKey,
      decryptionKeys: config.decryptionKeys,
      databaseUrl: config.databaseUrl,
      temporalUiUrl: config.temporalUiUrl ?? devServer?.uiUrl,
      baseUrl: config.baseUrl,
      internalApiUrl: config.internalApiUrl,
      ...guards,
      maxIsolates: config.isolateMaxProcesses,
      deliveryShards: config.deliveryShards,
      tracing,
      logger,
    },
    started,
  );
  await startWorkerRole(parts, started, { retentionDays: config.retentionDays });
  const uiOrigins = devServer?.uiUrl ? [devServer.uiUrl, devServer.uiUrl.replace('127.0.0.1', 'localhost')] : [];
  await startApiRole(parts, started, {
    adminToken,
    port: config.port,
    codecTrustsLoopback: true,
    httpLimits: { ...DEFAULT_HTTP_LIMITS, connectionsPerClient: config.maxConnectionsPerClient },
    codecCorsOrigins: [...config.codecCorsOrigins, ...uiOrigins],
    liveness: devServer?.liveness,
  });

  process.stdout.write(
    [
      '',
      `  API          ${config.baseUrl}`,
      `  Temporal UI  ${devServer?.uiUrl ?? '(external cluster: ' + address + ')'}`,
      `  Admin token  ${adminToken}`,
      `  Data         ${config.dataDir}${config.allowPrivateTargets ? '   (private webhook targets allowed)' : ''}`,
      '',
      '  Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
}
