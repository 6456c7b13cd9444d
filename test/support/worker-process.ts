import { runEntryPoint } from '../../src/lifecycle';
import { createLogger } from '../../src/logger';
import { installTemporalRuntime } from '../../src/temporal/runtime-logger';
import { testPlatformPorts } from './settings';
import './stall-watch';
import { buildTestParts, startTestWorker } from './worker';

/**
 * A worker in a process of its own, so a test can SIGKILL or SIGTERM it:
 * `node worker-process.js <namespace> <taskQueue> <databaseUrl> <apiBaseUrl>`. Its
 * signals are handled as the platform's entry points handle them (a stop drains the
 * worker, then closes the log).
 */
runEntryPoint('test worker failed', async (heed) => {
  const [namespace, taskQueue, databaseUrl, baseUrl] = process.argv.slice(2) as [string, string, string, string];
  const logger = createLogger('warn');
  installTemporalRuntime(logger);
  const started = heed(logger);
  const parts = await buildTestParts({ namespace, taskQueue, databaseUrl, baseUrl, platformPorts: testPlatformPorts(), logger }, started);
  const { running } = await startTestWorker(parts, started);
  process.stdout.write('ready\n');
  await running;
});
