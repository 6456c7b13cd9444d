import assert from 'node:assert/strict';
import { FailingReceivers } from '../src/ingest/failing-receivers';
import { IngestService } from '../src/ingest/ingest-service';
import type { ShardClient } from '../src/ingest/shard-client';
import type { ShardItem } from '../src/workflows/shard-contract';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { closedPortUrl, ScriptedReceiver } from './support/receiver';

/**
 * Receivers failing now (issue 28's isolation): a real attempt batch writes how an
 * installation's receiver failed all its attempts, the log answers it, and ingest hands it
 * to the shard beside each delivery, so that a shard of a later epoch, which has not seen
 * that receiver yet, batches it with the other failing ones from its first attempt.
 */
describe('receivers failing now, from the attempts to the hand-over', function () {
  const platform = new TestPlatform(__filename);
  before(async () => platform.start());
  after(async () => platform.stop());

  it('is written by the attempt batch (refused: fast), cleared once the receiver answers, and carried by ingest to the shard', async function () {
    const tenant = await platform.tenant();
    const receiver = await new ScriptedReceiver(() => ({ status: 200 })).start();
    const refusedUrl = await closedPortUrl();
    try {
      const failing = await platform.webhook(tenant.token, { org: tenant.org, space: 'refused' }, refusedUrl, { space_content_updated: true });
      const healthy = await platform.webhook(tenant.token, { org: tenant.org, space: 'healthy' }, receiver.url, { space_content_updated: true });
      await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'refused'));
      await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'healthy'));
      // After its first refused attempt, not its fourth: a shard of the next epoch knows it at once.
      const failingNow = await waitFor(async () => {
        const known = await platform.stores.health.failingNow();
        return known.get(failing.id) ? known : undefined;
      }, 20_000, 'the refused receiver written as failing');
      assert.equal(failingNow.get(failing.id), 'fast');
      assert.equal(failingNow.has(healthy.id), false, 'a receiver that answers is not failing');

      // Ingest hands it over with each delivery, to a recording stand-in of the engine.
      const handedOver: ShardItem[] = [];
      const engine = { shards: 1, shardOf: () => 0, epochOf: (at: number) => Math.floor(at / 5000), enqueue: async (_shard: number, items: ShardItem[]) => void handedOver.push(...items) } as unknown as ShardClient;
      const ingest = new IngestService(platform.stores.events, platform.stores.installations, engine, new FailingReceivers(() => platform.stores.health.failingNow()));
      const hintOf = async (space: string, installationId: string) => {
        await ingest.ingest({ ...spaceEvent(tenant.org, space), type: 'space_content_updated' });
        return handedOver.filter((item) => item.installationId === installationId).at(-1)!.failing;
      };
      // Asking never waits for the log: the first hand-over may go without it, a later one carries it
      // (its read is at most a second old). Each try ingests an event: every 500 ms, not 100.
      assert.equal(await waitFor(async () => (await hintOf('refused', failing.id)) ?? undefined, 10_000, 'the hint on a hand-over', 500), 'fast');
      assert.equal(await hintOf('healthy', healthy.id), undefined);

      // Its receiver answers again (its URL now a listener's): the next attempt clears it.
      const patched = await platform.http('PATCH', `/v1/installations/${failing.id}/configuration`, { token: tenant.token, body: { webhook_url: receiver.url } });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'refused'));
      await waitFor(async () => ((await platform.stores.health.failingNow()).has(failing.id) ? undefined : true), 20_000, 'the failing state cleared');
    } finally {
      await receiver.stop();
    }
  });
});
