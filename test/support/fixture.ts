import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findOrBuildTemporalCli } from '../../src/temporal/cli-binary';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { generateEncryptionKey } from '../../src/temporal/codec';
import { allTestNamespaces } from './namespaces';
import { startPostgres, type TestPostgres } from './postgres';
import { bundleWorkflows } from './bundle';

let server: DevServer | undefined;
let postgres: TestPostgres | undefined;

/**
 * Mocha global fixture: one Temporal dev server from the cached CLI, one workflow bundle
 * and one PostgreSQL cluster per run, handed to the test processes through the environment.
 */
export async function mochaGlobalSetup(): Promise<void> {
  const cliPath = await findOrBuildTemporalCli(process.env);
  const namespaces = allTestNamespaces(path.join(__dirname, '..'));
  server = await startDevServer({ cliPath, namespace: 'default', extraNamespaces: namespaces });
  const code = await bundleWorkflows();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-test-'));
  writeFileSync(path.join(dir, 'workflow-bundle.js'), code);
  process.env.TEST_TEMPORAL_ADDRESS = server.address;
  process.env.TEST_TEMPORAL_PID = String(server.pid);
  process.env.TEST_WORKFLOW_BUNDLE = path.join(dir, 'workflow-bundle.js');
  process.env.TEST_ENCRYPTION_KEY = generateEncryptionKey();
  process.env.TEMPORAL_CLI_RESOLVED = cliPath;
  try {
    postgres = await startPostgres();
    process.env.TEST_POSTGRES_URL = postgres.url;
  } catch (err) {
    // The rest of the suite still runs; every PostgreSQL test fails, saying why (testDatabaseUrl).
    process.env.TEST_POSTGRES_UNAVAILABLE = (err as Error).message;
  }
}

export async function mochaGlobalTeardown(): Promise<void> {
  await Promise.all([server?.stop(), postgres?.stop()]);
}
