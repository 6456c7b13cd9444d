import { configFromEnv } from '../config';
import type { Heed } from '../lifecycle';
import { serveMetrics } from '../metrics/server';
import { startExternal } from './external';
import { startWorkerRole } from './roles';

/** `node dist/src/main.js worker`: the worker alone, configured from the environment (docker-compose), with its metrics endpoint. */
export async function runWorkerProcess(heed: Heed): Promise<void> {
  const config = configFromEnv();
  const { parts, started } = await startExternal(config, heed, 'worker');
  const { running } = await startWorkerRole(parts, started, { retentionDays: config.retentionDays });
  const metrics = await started.add('the metrics endpoint', await serveMetrics(config.workerMetricsPort), (serving) => serving.close());
  parts.settings.logger.info({ taskQueue: config.taskQueue, metricsPort: metrics.port }, 'worker running');
  await running;
}
