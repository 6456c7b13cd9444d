import { existsSync } from 'node:fs';
import path from 'node:path';
import { findOrBuildTemporalCli } from '../../src/temporal/cli-binary';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { generateEncryptionKey } from '../../src/temporal/codec';
import { allTestNamespaces } from './namespaces';
import { startPostgres, type TestPostgres } from './postgres';
import { PREBUILT_WORKFLOW_BUNDLE } from '../../src/worker';

let server: DevServer | undefined;
let postgres: TestPostgres | undefined;

/**
 * Mocha global fixture: one Temporal dev server from the cached CLI, the workflow bundle
 * the build made (the one the platform's workers load) and one PostgreSQL cluster per run, handed to the test processes through the environment.
 */
export async function mochaGlobalSetup(): Promise<void> {
  const cliPath = await findOrBuildTemporalCli(process.env);
  const namespaces = allTestNamespaces(path.join(__dirname, '..'));
  server = await startDevServer({ cliPath, namespace: 'default', extraNamespaces: namespaces });
  if (!existsSync(PREBUILT_WORKFLOW_BUNDLE)) throw new Error(`${PREBUILT_WORKFLOW_BUNDLE} is missing: \`npm test\` builds it (npm run build)`);
  process.env.TEST_TEMPORAL_ADDRESS = server.address;
  process.env.TEST_TEMPORAL_PID = String(server.pid);
  process.env.TEST_WORKFLOW_BUNDLE = PREBUILT_WORKFLOW_BUNDLE;
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

/**
 * Root hooks of every test process: the file and test running now, which a stall report
 * names (see stall-watch.ts).
 */
export const mochaHooks = {
  beforeAll(this: Mocha.Context) {
    (globalThis as { runningTest?: string }).runningTest = `${path.basename(this.test?.parent?.suites.at(-1)?.file ?? '?')} (its before hooks)`;
  },
  beforeEach(this: Mocha.Context) {
    (globalThis as { runningTest?: string }).runningTest = `${path.basename(this.currentTest?.file ?? '?')}: ${this.currentTest?.title}`;
  },
};
