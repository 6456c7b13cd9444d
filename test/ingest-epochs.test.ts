import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { idsOfOneShard } from './support/settings';
import { runWorkerOf } from './support/worker-outage';

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

describe('the backlog bound across delivery shard epochs', function () {
  this.timeout(90_000);
  // Three-second epochs, one delivery at most, and no worker to ask: what was handed over counts whole.
  const platform = new TestPlatform(__filename, { worker: false, shardLimits: { maxBacklog: 1, epochMs: 3000 } });
  const receiver = new ScriptedReceiver();

  before(async () => Promise.all([platform.start(), receiver.start()]));
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  const untilEpochStarts = async () => new Promise((resolve) => setTimeout(resolve, 3000 - (Date.now() % 3000) + 50));

  it('admits an event retried in a later epoch against the epoch it was recorded in, and delivers it once a worker is back', async function () {
    let worker = await runWorkerOf(platform);
    const tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'bound' }, receiver.url, { space_content_updated: true });
    await worker.stop();

    const [first, second] = (idsOfOneShard(`bound_${Date.now()}`, 2) as [string, string]).map((eventId) => ({ ...spaceEvent(tenant.org, 'bound'), eventId }));
    await untilEpochStarts();
    assert.equal((await platform.admin('POST', '/v1/events', first)).status, 202);
    // The epoch holds one delivery: the second is recorded, and refused.
    assert.equal((await platform.admin('POST', '/v1/events', second)).status, 503);
    await untilEpochStarts();
    // Retried in the next epoch, it still belongs to the one it was recorded in, which is full.
    const again = await platform.admin('POST', '/v1/events', second);
    assert.equal(again.status, 503, JSON.stringify(again.body));

    worker = await runWorkerOf(platform);
    try {
      const accepted = await platform.ingest(second, 20_000);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      assert.equal((await platform.finalDelivery(accepted.body.deliveries[0], tenant.token)).status, 'delivered');
      await waitFor(async () => (receiver.requests.length >= 2 ? true : undefined), 10_000, 'both deliveries');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      for (const { eventId } of [first, second]) assert.equal(receiver.requests.filter((request) => JSON.parse(request.body).eventId === eventId).length, 1, eventId);
    } finally {
      await worker.stop();
    }
  });
});

