import { readFileSync } from 'node:fs';
import { createLogger } from '../../src/logger';
import { connectClient } from '../../src/temporal/client';
import { installTemporalRuntime } from '../../src/temporal/runtime-logger';
import { createWorker } from '../../src/worker';
import { testPlatformPorts, testSettings } from './settings';
import { webhookGuard } from '../../src/net/guards';

/** A worker in a process of its own, so a test can SIGKILL it: `node worker-process.js <namespace> <taskQueue>`. */
async function main(): Promise<void> {
  const [namespace, taskQueue] = process.argv.slice(2) as [string, string];
  const { address, bundle, encryptionKey } = testSettings();
  const logger = createLogger('warn');
  installTemporalRuntime(logger);
  const client = await connectClient({ address, namespace, encryptionKey });
  const worker = await createWorker({ address, namespace, taskQueue, encryptionKey, workflowBundle: { code: readFileSync(bundle, 'utf8') }, client, webhookGuard: webhookGuard(true, testPlatformPorts()), logger });
  const running = worker.run();
  process.stdout.write('ready\n');
  await running;
  await client.connection.close();
  process.exit(0);
}

void main();
