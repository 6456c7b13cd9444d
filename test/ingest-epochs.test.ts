import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/** Ingest when the shard's epoch (one second here) turns between an event and its repeat. */
describe('ingest across delivery shard epochs', function () {
  this.timeout(60_000);
  const platform = new TestPlatform(__filename, { shardLimits: { epochMs: 1000 } });
  // The first POST is answered after 2.5 s: the delivery is still in flight, unrecorded, when the repeat comes.
  const receiver = new ScriptedReceiver((n) => ({ status: 200, delayMs: n === 0 ? 2500 : 0 }));

  before(async () => Promise.all([platform.start(), receiver.start()]));
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it('a repeat in a later epoch goes to the workflow that holds the delivery: one POST, and that workflow completes', async function () {
    const tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'epochs' }, receiver.url, { space_content_updated: true });
    const event = { ...spaceEvent(tenant.org, 'epochs'), eventId: `evt_epochs_${Date.now()}` };
    const first = await platform.admin('POST', '/v1/events', event);
    assert.equal(first.status, 202);
    await waitFor(async () => receiver.requests.length || undefined, 10_000, 'the first POST');
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const repeat = await platform.admin('POST', '/v1/events', event);
    assert.deepEqual(repeat.body, first.body);

    const delivery = await platform.finalDelivery(first.body.deliveries[0], tenant.token);
    assert.equal(delivery.status, 'delivered');
    assert.equal(delivery.attemptCount, 1);
    // A second workflow attempting it would have sent by now (it found nothing recorded).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(receiver.requests.length, 1, 'POSTed once');
    const shard = platform.client.workflow.getHandle(delivery.workflow.workflowId);
    await waitFor(async () => ((await shard.describe()).status.name === 'COMPLETED' ? true : undefined), 10_000, 'its epoch workflow to complete');
  });
});
