import assert from 'node:assert/strict';
import { TestPlatform, waitFor } from './support/platform';
import { runWorkerOf } from './support/worker-outage';

describe('the directory read model', function () {
  this.timeout(120_000);
  const platform = new TestPlatform(__filename, { worker: false });

  before(() => platform.start());
  after(() => platform.stop());

  it('of a directory from before it (the rows missing) is filled from the directory workflow when a worker starts', async function () {
    const first = await runWorkerOf(platform);
    const tenant = await platform.tenant().finally(() => first.stop());
    const asMember = () => platform.http('GET', `/v1/installations?org=${tenant.org}`, { token: tenant.token });
    assert.equal((await asMember()).status, 200);
    // As the log of a platform from before migration 0005 is: the workflow knows them, the read model does not.
    await platform.stores.db.deleteFrom('users').execute();
    await platform.stores.db.deleteFrom('organizations').execute();
    // Past the authenticator's 5 s cache of the token's principal.
    await waitFor(async () => ((await asMember()).status === 401 ? true : undefined), 10_000, 'the member to be unknown');
    const second = await runWorkerOf(platform);
    try {
      await waitFor(async () => ((await asMember()).status === 200 ? true : undefined), 20_000, 'the read model to be filled');
      assert.deepEqual(await platform.stores.directory.organization(tenant.org).then((org) => org?.id), tenant.org);
    } finally {
      await second.stop();
    }
  });
});
