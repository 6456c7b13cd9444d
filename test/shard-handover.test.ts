import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { idsOfOneShard, WHOLE_RUN_EPOCH_MS, wholeRunShardWorkflowId } from './support/settings';

/** A shard's handover to its next run, through the real API, worker and receivers. */
describe('a delivery shard hands over while a receiver hangs', function () {
  this.timeout(90_000);
  // Three hand-overs a run: the shard hands over while the slow answer is still in flight.
  const platform = new TestPlatform(__filename, { shardLimits: { handOversPerRun: 3, epochMs: WHOLE_RUN_EPOCH_MS } });
  /** Under the 10 s attempt timeout, and long enough that the quick events all come while it hangs, on a loaded machine too. */
  const slow = new ScriptedReceiver(() => ({ status: 200, delayMs: 8000 }));
  const fast = new ScriptedReceiver();

  before(async () => Promise.all([platform.start(), slow.start(), fast.start()]));
  after(async () => Promise.all([platform.stop(), slow.stop(), fast.stop()]));

  it('without waiting for it: other deliveries keep flowing, and the hanging one is attempted once', async function () {
    const tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'slow' }, slow.url, { space_content_updated: true });
    await platform.webhook(tenant.token, { org: tenant.org, space: 'fast' }, fast.url, { space_content_updated: true });
    const [hanging, ...quick] = idsOfOneShard(`handover_${tenant.org}`, 7);
    const shard = platform.client.workflow.getHandle(wholeRunShardWorkflowId(hanging!));

    const stuck = await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'slow', { eventId: hanging }));
    await waitFor(async () => slow.requests.length || undefined, 10_000, 'the slow attempt');
    const firstRun = (await shard.describe()).runId;
    // Each of these is one more hand-over: the run's third starts its handover.
    const latencies: number[] = [];
    for (const eventId of quick) {
      const sent = performance.now();
      await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'fast', { eventId }));
      const arrived = await waitFor(async () => fast.requests.find((request) => JSON.parse(request.body).eventId === eventId), 10_000, `${eventId} at the fast receiver`);
      latencies.push(arrived.at - sent);
    }
    assert.notEqual((await shard.describe()).runId, firstRun, 'the shard handed over');
    assert.equal(slow.requests.length, 1, 'the slow answer was still in flight');
    // Waiting for the slow answer would have held one of them for up to 8 s.
    assert.ok(Math.max(...latencies) < 4500, `the fast deliveries took ${latencies.map(Math.round).join(', ')} ms`);

    // The hanging batch went over with the run; its next run finds the attempt recorded.
    const final = await platform.finalDelivery(stuck.body.deliveries[0], tenant.token);
    assert.equal(final.status, 'delivered');
    await new Promise((resolve) => setTimeout(resolve, 16_000));
    assert.equal(slow.requests.length, 1, 'attempted once');
    assert.equal((await platform.http('GET', `/v1/deliveries/${encodeURIComponent(stuck.body.deliveries[0])}`, { token: tenant.token })).body.attemptCount, 1);
  });
});
