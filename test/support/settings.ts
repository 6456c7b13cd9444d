import { PlatformPorts } from '../../src/net/platform-ports';

/** What the mocha global fixture hands every test process through the environment. */
export function testSettings(): { address: string; bundle: string; encryptionKey: string } {
  const address = process.env.TEST_TEMPORAL_ADDRESS;
  const bundle = process.env.TEST_WORKFLOW_BUNDLE;
  const encryptionKey = process.env.TEST_ENCRYPTION_KEY;
  if (!address || !bundle || !encryptionKey) throw new Error('the mocha global fixture (test/support/fixture) did not run');
  return { address, bundle, encryptionKey };
}

/**
 * The guard's view of the platform in a test process: the run's dev server (and every port
 * it opened) and the ports a test adds. Not this process's own tree: the tests' receivers
 * live in it too, and they stand for hosts outside the platform.
 */
export function testPlatformPorts(): PlatformPorts {
  const { address } = testSettings();
  return new PlatformPorts({ pids: [Number(process.env.TEST_TEMPORAL_PID)], ports: [Number(address.split(':').at(-1))] });
}
