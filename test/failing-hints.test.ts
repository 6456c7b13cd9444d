import assert from 'node:assert/strict';
import { ReceiverStates } from '../src/ingest/receiver-states';
import { recordReceiverStates } from '../src/delivery-log/receiver-health';
import { IngestService } from '../src/ingest/ingest-service';
import type { ShardClient } from '../src/ingest/shard-client';
import type { ShardItem } from '../src/workflows/shard-contract';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { closedPortUrl, ScriptedReceiver } from './support/receiver';

/**
 * Receivers failing or prompt now (issue 28's isolation): a real attempt batch writes how an
 * installation's receiver failed all its attempts, or that it answered them promptly, the
 * log answers it, and ingest hands it to the shard beside each delivery, so that a shard of
 * a later epoch, which has not seen that receiver yet, batches it with the other failing
 * (or prompt) ones from its first attempt.
 */
describe('receivers failing or prompt now, from the attempts to the hand-over', function () {
  const platform = new TestPlatform(__filename);
  before(async () => platform.start());
  after(async () => platform.stop());

  it('is written by the attempt batch (refused: fast; answered at once: prompt), changed once the receiver answers, and carried by ingest to the shard', async function () {
    const tenant = await platform.tenant();
    const receiver = await new ScriptedReceiver(() => ({ status: 200 })).start();
    const refusedUrl = await closedPortUrl();
    try {
      const failing = await platform.webhook(tenant.token, { org: tenant.org, space: 'refused' }, refusedUrl, { space_content_updated: true });
      const healthy = await platform.webhook(tenant.token, { org: tenant.org, space: 'healthy' }, receiver.url, { space_content_updated: true });
      await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'refused'));
      await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'healthy'));
      // After its first refused attempt, not its fourth: a shard of the next epoch knows it at once.
      const states = await waitFor(async () => {
        const known = await platform.stores.health.receiverStates();
        return known.get(failing.id) && known.get(healthy.id) ? known : undefined;
      }, 20_000, 'both receivers written');
      assert.equal(states.get(failing.id)?.state, 'fast');
      assert.equal(states.get(healthy.id)?.state, 'prompt', 'answered within 500 ms of its time');

      // Ingest hands it over with each delivery, to a recording stand-in of the engine.
      const handedOver: ShardItem[] = [];
      const engine = { shards: 1, shardOf: () => 0, epochOf: (at: number) => Math.floor(at / 5000), enqueue: async (_shard: number, items: ShardItem[]) => void handedOver.push(...items) } as unknown as ShardClient;
      const reads: (number | undefined)[] = [];
      const ingest = new IngestService(platform.stores.events, platform.stores.installations, engine, new ReceiverStates(async (since) => {
        reads.push(since);
        return platform.stores.health.receiverStates(since);
      }));
      const hintOf = async (space: string, installationId: string) => {
        await ingest.ingest({ ...spaceEvent(tenant.org, space), type: 'space_content_updated' });
        const item = handedOver.filter((handed) => handed.installationId === installationId).at(-1)!;
        return item.failing ?? (item.prompt && 'prompt');
      };
      // Asking never waits for the log: the first hand-over may go without it, a later one carries it
      // (its read is at most a second old). Each try ingests an event: every 500 ms, not 100.
      assert.equal(await waitFor(async () => (await hintOf('refused', failing.id)) ?? undefined, 10_000, 'the hint on a hand-over', 500), 'fast');
      assert.equal(await hintOf('healthy', healthy.id), 'prompt');

      // Its receiver answers again (its URL now a listener's): the next attempt clears it.
      const patched = await platform.http('PATCH', `/v1/installations/${failing.id}/configuration`, { token: tenant.token, body: { webhook_url: receiver.url } });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'refused'));
      await waitFor(async () => ((await platform.stores.health.receiverStates()).get(failing.id)?.state === 'fast' ? undefined : true), 20_000, 'the failing state cleared');
      // The hint follows by a read of what changed since the last (not of every receiver): prompt now.
      assert.equal(await waitFor(async () => ((await hintOf('refused', failing.id)) === 'prompt' ? 'prompt' : undefined), 10_000, 'the new hint', 500), 'prompt');
      assert.equal(reads[0], undefined, 'the first read takes all');
      assert.ok(reads.slice(1).every((since) => typeof since === 'number'), `later reads take what changed: ${reads.join()}`);
    } finally {
      await receiver.stop();
    }
  });

  it('hands a receiver failing fast for less than 2 s over as it stood before (prompt, or nothing said); one that hangs at once', async function () {
    const now = Date.now();
    // As attempt batches write them: failing fast for 500 ms, for 5 s, hanging since 500 ms ago, answering promptly.
    await recordReceiverStates(platform.stores.db, new Map(), new Map([['ins_hint_long', 'fast']]), now - 5000);
    await recordReceiverStates(platform.stores.db, new Map(), new Map([['ins_hint_just', 'fast'], ['ins_hint_long', 'fast'], ['ins_hint_hangs', 'slow'], ['ins_hint_flap', 'prompt']]), now - 500);
    const states = new ReceiverStates((since) => platform.stores.health.receiverStates(since));
    await waitFor(async () => (states.stateOf('ins_hint_flap') ? true : undefined), 10_000, 'the first read');
    assert.equal(states.stateOf('ins_hint_just', now), undefined, 'failing for 500 ms, nothing known before');
    assert.equal(states.stateOf('ins_hint_just', now + 1500), 'fast', 'failing for 2 s');
    assert.equal(states.stateOf('ins_hint_long', now), 'fast');
    assert.equal(states.stateOf('ins_hint_hangs', now), 'slow');
    // The prompt one answers a batch 500 throughout: prompt still, for 2 s.
    const failedAt = Date.now();
    await recordReceiverStates(platform.stores.db, new Map(), new Map([['ins_hint_flap', 'fast']]), failedAt);
    await waitFor(async () => (states.stateOf('ins_hint_flap', failedAt + 2000) === 'fast' ? true : undefined), 10_000, 'a read of what changed');
    assert.equal(states.stateOf('ins_hint_flap', failedAt + 1000), 'prompt');
  });
});
