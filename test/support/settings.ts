/** What the mocha global fixture hands every test process through the environment. */
export function testSettings(): { address: string; bundle: string; encryptionKey: string } {
  const address = process.env.TEST_TEMPORAL_ADDRESS;
  const bundle = process.env.TEST_WORKFLOW_BUNDLE;
  const encryptionKey = process.env.TEST_ENCRYPTION_KEY;
  if (!address || !bundle || !encryptionKey) throw new Error('the mocha global fixture (test/support/fixture) did not run');
  return { address, bundle, encryptionKey };
}
