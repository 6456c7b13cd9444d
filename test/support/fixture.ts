import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { findOrBuildTemporalCli } from '../../src/temporal/cli-binary';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { generateEncryptionKey } from '../../src/temporal/codec';
import { allTestNamespaces } from './namespaces';

let server: DevServer | undefined;

/**
 * Mocha global fixture: one Temporal dev server from the cached CLI and one workflow bundle
 * per run, handed to the test processes through the environment.
 */
export async function mochaGlobalSetup(): Promise<void> {
  const cliPath = await findOrBuildTemporalCli();
  const namespaces = allTestNamespaces(path.join(__dirname, '..'));
  server = await startDevServer({ cliPath, namespace: 'default', extraNamespaces: namespaces });
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../../src/workflows'), logger: quietLogger });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-test-'));
  writeFileSync(path.join(dir, 'workflow-bundle.js'), code);
  process.env.TEST_TEMPORAL_ADDRESS = server.address;
  process.env.TEST_TEMPORAL_PID = String(server.pid);
  process.env.TEST_WORKFLOW_BUNDLE = path.join(dir, 'workflow-bundle.js');
  process.env.TEST_ENCRYPTION_KEY = generateEncryptionKey();
  process.env.TEMPORAL_CLI_RESOLVED = cliPath;
}

export async function mochaGlobalTeardown(): Promise<void> {
  await server?.stop();
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => process.stderr.write(`bundle: ${message}\n`),
  error: (message: string) => process.stderr.write(`bundle: ${message}\n`),
};
