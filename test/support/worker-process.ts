import { openStores } from '../../src/platform/stores';
import { createIntegrationRuntime } from '../../src/isolates';
import { createLogger } from '../../src/logger';
import { egressGuard } from '../../src/net/guards';
import { connectClient } from '../../src/temporal/client';
import { installTemporalRuntime } from '../../src/temporal/runtime-logger';
import { testPlatformPorts, testSettings } from './settings';
import { createTestWorker } from './worker';

/**
 * A worker in a process of its own, so a test can SIGKILL it:
 * `node worker-process.js <namespace> <taskQueue> <databaseUrl> <apiBaseUrl>`.
 */
async function main(): Promise<void> {
  const [namespace, taskQueue, databaseUrl, baseUrl] = process.argv.slice(2) as [string, string, string, string];
  const { address, encryptionKey } = testSettings();
  const logger = createLogger('warn');
  installTemporalRuntime(logger);
  const stores = await openStores({ url: databaseUrl, encryptionKey, namespace });
  const client = await connectClient({ address, namespace, encryptionKey });
  const platformPorts = testPlatformPorts();
  const { runtime } = createIntegrationRuntime({ client, encryptionKey, baseUrl, egressGuard: egressGuard([], platformPorts), platformPorts, stores });
  const worker = await createTestWorker({ namespace, taskQueue, client, stores, runtime, baseUrl, platformPorts, logger });
  const running = worker.run();
  process.stdout.write('ready\n');
  await running;
  await stores.close();
  process.exit(0);
}

void main();
