import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { idsOfOneShard, WHOLE_RUN_EPOCH_MS, wholeRunShardWorkflowId } from './support/settings';

/** A shard's handover to its next run, through the real API, worker and receivers. */
describe('a delivery shard hands over while a receiver hangs', function () {
  this.timeout(90_000);
  // Three hand-overs a run: the shard hands over while the slow answer is still in flight.
  const platform = new TestPlatform(__filename, { shardLimits: { handOversPerRun: 3, epochMs: WHOLE_RUN_EPOCH_MS } });
  /** Hangs until the quick events are all in (9 s at most, under the 10 s attempt timeout): one held behind it would keep it hanging. */
  let quickIn!: () => void;
  const slow = new ScriptedReceiver(() => ({ status: 200, delayMs: 9000, until: new Promise<void>((resolve) => (quickIn = resolve)) }));
  const fast = new ScriptedReceiver();

  before(async () => Promise.all([platform.start(), slow.start(), fast.start()]));
  after(async () => Promise.all([platform.stop(), slow.stop(), fast.stop()]));

  it('without waiting for it: other deliveries keep flowing, and the hanging one is attempted once', async function () {
    const tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'slow' }, slow.url, { space_content_updated: true });
    await platform.webhook(tenant.token, { org: tenant.org, space: 'fast' }, fast.url, { space_content_updated: true });
    const [hanging, ...quick] = idsOfOneShard(`handover_${tenant.org}`, 7);
    const shard = platform.client.workflow.getHandle(wholeRunShardWorkflowId(hanging!));

    const stuck = await platform.ingest(spaceEvent(tenant.org, 'slow', { eventId: hanging }));
    await waitFor(async () => slow.requests.length || undefined, 10_000, 'the slow attempt');
    const firstRun = (await shard.describe()).runId;
    // Each of these is one more hand-over: the run's third starts its handover.
    for (const eventId of quick) {
      await platform.ingest(spaceEvent(tenant.org, 'fast', { eventId }));
      await waitFor(async () => fast.requests.find((request) => JSON.parse(request.body).eventId === eventId), 10_000, `${eventId} at the fast receiver`);
    }
    quickIn();
    assert.notEqual((await shard.describe()).runId, firstRun, 'the shard handed over');
    await waitFor(async () => slow.requests[0]!.answeredAt, 10_000, 'the slow answer');
    // Waiting for the slow answer, one of them would have come only after it (at its 9 s bound).
    assert.ok(Math.max(...fast.requests.map((request) => request.at)) < slow.requests[0]!.answeredAt!, 'a quick delivery came after the slow answer');
    assert.equal(slow.requests.length, 1);

    // The hanging batch went over with the run; its next run finds the attempt recorded.
    const final = await platform.finalDelivery(stuck.body.deliveries[0], tenant.token);
    assert.equal(final.status, 'delivered');
    await new Promise((resolve) => setTimeout(resolve, 16_000));
    assert.equal(slow.requests.length, 1, 'attempted once');
    assert.equal((await platform.http('GET', `/v1/deliveries/${encodeURIComponent(stuck.body.deliveries[0])}`, { token: tenant.token })).body.attemptCount, 1);
  });
});
