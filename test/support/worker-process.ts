import { readFileSync } from 'node:fs';
import { openDeliveryLog } from '../../src/delivery-log';
import { createLogger } from '../../src/logger';
import { webhookGuard } from '../../src/net/guards';
import { installTemporalRuntime } from '../../src/temporal/runtime-logger';
import { createWorker } from '../../src/worker';
import { testPlatformPorts, testSettings } from './settings';

/**
 * A worker in a process of its own, so a test can SIGKILL it:
 * `node worker-process.js <namespace> <taskQueue> <databaseUrl>`.
 */
async function main(): Promise<void> {
  const [namespace, taskQueue, databaseUrl] = process.argv.slice(2) as [string, string, string];
  const { address, bundle, encryptionKey } = testSettings();
  const logger = createLogger('warn');
  installTemporalRuntime(logger);
  const stores = await openDeliveryLog({ url: databaseUrl, encryptionKey, namespace });
  const worker = await createWorker({
    address,
    namespace,
    taskQueue,
    encryptionKey,
    workflowBundle: { code: readFileSync(bundle, 'utf8') },
    log: stores.log,
    installations: stores.installations,
    webhookGuard: webhookGuard(true, testPlatformPorts()),
    retentionDays: 30,
    logger,
  });
  const running = worker.run();
  process.stdout.write('ready\n');
  await running;
  await stores.close();
  process.exit(0);
}

void main();
