import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { idsOfOneShard, WHOLE_RUN_EPOCH_MS, wholeRunShardWorkflowId } from './support/settings';
import { backlogQuery } from '../src/workflows/shard-contract';
import { runWorkerOf } from './support/worker-outage';
import { eventsIngested } from '../src/metrics';

/** platform_events_ingested_total of this process (the test's API runs in it). */
const ingestedCount = async () => (await eventsIngested.get()).values.reduce((sum, { value }) => sum + value, 0);

describe('ingest while the engine does not answer', function () {
  this.timeout(90_000);
  // The test runs the worker itself, and stops it: then the shard's hand-overs wait in its
  // history, and its backlog (two deliveries at most here) cannot be asked.
  const platform = new TestPlatform(__filename, { worker: false, shardLimits: { maxBacklog: 2, epochMs: WHOLE_RUN_EPOCH_MS } });
  const receiver = new ScriptedReceiver();

  before(async () => Promise.all([platform.start(), receiver.start()]));
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it('accepts up to the shard’s bound without a worker, then answers 503 with Retry-After within 2 s; the retry with the same eventId, once a worker is back, delivers once', async function () {
    // Installing needs the engine: a worker for that, then none.
    let worker = await runWorkerOf(platform);
    const tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'down' }, receiver.url, { space_content_updated: true });
    await worker.stop();

    // Durable in the shard's history: the engine's to deliver once a worker is back.
    const [first, second, third] = idsOfOneShard(`down_${Date.now()}`, 3) as [string, string, string];
    const early = [first, second].map((eventId) => ({ ...spaceEvent(tenant.org, 'down'), eventId }));
    for (const accepted of early) assert.equal((await platform.admin('POST', '/v1/events', accepted)).status, 202);
    const event = { ...spaceEvent(tenant.org, 'down'), eventId: third };
    const ingestedBefore = await ingestedCount();
    const started = Date.now();
    const refused = await platform.admin('POST', '/v1/events', event);
    const elapsed = Date.now() - started;
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.equal(refused.body.error, 'unavailable');
    assert.match(refused.body.message, /holds 2 deliveries \(at most 2\)/);
    assert.ok(elapsed < 2000, `answered after ${elapsed} ms`);
    // A batch none of whose events was accepted is a 503 as a whole, an invalid event in it
    // too: retried whole, that one's 400 comes then.
    const { revisionId: _revision, ...invalid } = spaceEvent(tenant.org, 'down');
    const batch = await platform.admin('POST', '/v1/events/batch', { events: [event, invalid] });
    assert.equal(batch.status, 503, JSON.stringify(batch.body));
    assert.equal(batch.headers.get('retry-after'), '1');
    // Another API process has never seen the organization: the read model knows it, without the
    // engine. The shard's bound is each process's own, so this one hands the event over: a
    // signal, durable without a worker (the shard takes the id once, whoever hands it over).
    const fresh = await new TestPlatform(__filename, { worker: false, adminToken: platform.adminToken, databaseUrl: platform.databaseUrl }).start();
    try {
      const askedAt = Date.now();
      assert.equal((await fresh.admin('POST', '/v1/events', event)).status, 202);
      assert.ok(Date.now() - askedAt < 2000, `answered after ${Date.now() - askedAt} ms`);
    } finally {
      await fresh.stop();
    }

    worker = await runWorkerOf(platform);
    try {
      const accepted = await platform.ingest(event, 15_000);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      // Recorded at its first, refused ingest, it was counted then: its retries are not counted again.
      assert.equal((await ingestedCount()) - ingestedBefore, 1);
      const delivery = await platform.finalDelivery(accepted.body.deliveries[0], tenant.token);
      assert.equal(delivery.status, 'delivered');
      await waitFor(async () => (receiver.requests.length >= 3 ? true : undefined), 10_000, 'the deliveries');
      // The shard (of the whole run) holds nothing more: a second POST of any of them would have gone out before.
      const shard = platform.client.workflow.getHandle(wholeRunShardWorkflowId(first));
      await waitFor(async () => ((await shard.query(backlogQuery)) === 0 ? true : undefined), 10_000, 'the shard to hold nothing');
      for (const { eventId } of [...early, event]) assert.equal(receiver.requests.filter((request) => JSON.parse(request.body).eventId === eventId).length, 1, eventId);
    } finally {
      await worker.stop();
    }
  });
});
