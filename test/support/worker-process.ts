import { StartedParts } from '../../src/lifecycle';
import { createLogger } from '../../src/logger';
import { installTemporalRuntime } from '../../src/temporal/runtime-logger';
import { testPlatformPorts } from './settings';
import { buildTestParts, startTestWorker } from './worker';

/**
 * A worker in a process of its own, so a test can SIGKILL it:
 * `node worker-process.js <namespace> <taskQueue> <databaseUrl> <apiBaseUrl>`.
 */
async function main(): Promise<void> {
  const [namespace, taskQueue, databaseUrl, baseUrl] = process.argv.slice(2) as [string, string, string, string];
  const logger = createLogger('warn');
  installTemporalRuntime(logger);
  const started = new StartedParts(logger);
  const parts = await buildTestParts({ namespace, taskQueue, databaseUrl, baseUrl, platformPorts: testPlatformPorts(), logger }, started);
  const { running } = await startTestWorker(parts, started);
  process.stdout.write('ready\n');
  await running;
  await parts.stores.close();
  process.exit(0);
}

void main();
