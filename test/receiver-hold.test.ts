import assert from 'node:assert/strict';
import pino from 'pino';
import { createHeldRelease } from '../src/activities/held-release';
import { deliveryId } from '../src/ids';
import { registry } from '../src/metrics';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/**
 * Issue 28's isolation: an installation whose receiver has failed every attempt for a while
 * has its new events held (recorded, not attempted) instead of adding attempts that fail
 * beside every other tenant's; one of them is tried each sweep, and once the receiver
 * answers, a release operation delivers them all. Through the real pipeline: ingest, the
 * attempt batch's receiver states, the log, the batch's release and its operation workflow.
 */
describe('new events held while a receiver fails, released once it answers', function () {
  /** The platform's log lines (info and up), those of warn and up on stderr too. */
  const logged: { level: number; msg: string; installationId?: string; operation?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void (logged.push(JSON.parse(line) as (typeof logged)[number]), logged.at(-1)!.level >= 40 && process.stderr.write(line)) });
  const platform = new TestPlatform(__filename, { holdAfterMs: 1000, logger });
  before(async () => platform.start());
  after(async () => platform.stop());

  it('holds an installation’s events (not one that opted out of auto-pause, nor a healthy one), tries one a sweep, and delivers them all once its receiver answers, from the batch that sees it answer', async function () {
    let answering = false;
    const failingReceiver = await new ScriptedReceiver(() => ({ status: answering ? 200 : 503 })).start();
    const healthyReceiver = await new ScriptedReceiver().start();
    const tenant = await platform.tenant();
    try {
      const held = await platform.webhook(tenant.token, { org: tenant.org, space: 'down' }, failingReceiver.url, { space_content_updated: true });
      const optedOut = await platform.webhook(tenant.token, { org: tenant.org, space: 'down' }, failingReceiver.url, { space_content_updated: true, auto_pause: false });
      const healthy = await platform.webhook(tenant.token, { org: tenant.org, space: 'up' }, healthyReceiver.url, { space_content_updated: true });
      const delivery = async (id: string) => (await platform.http('GET', `/v1/deliveries/${encodeURIComponent(id)}`, { token: tenant.token })).body;
      const send = async (space: string) => {
        const answer = await platform.ingest(spaceEvent(tenant.org, space));
        assert.equal(answer.status, 202, JSON.stringify(answer.body));
        return answer.body.eventId as string;
      };

      // Events until one is held: its receiver has answered 503 to every attempt for a second (holdAfterMs) and ingest has read so.
      const sent: string[] = [];
      const firstHeld = await waitFor(
        async () => {
          const eventId = await send('down');
          sent.push(eventId);
          const mine = await delivery(deliveryId(eventId, held.id));
          return mine.status === 'held' ? { eventId, mine } : undefined;
        },
        30_000,
        'an event held',
        300,
      );
      assert.equal(firstHeld.mine.heldReason, 'receiver_failing');
      assert.equal(firstHeld.mine.attemptCount, 0);
      // Its health says so: failing fast (503s) since before the hold began.
      const health = (await platform.http('GET', `/v1/installations/${held.id}/health`, { token: tenant.token })).body;
      assert.equal(health.failingNow?.kind, 'fast', JSON.stringify(health));
      assert.ok(Date.parse(health.failingNow.since) <= Date.parse(firstHeld.mine.createdAt) - 1000, JSON.stringify(health));
      // The same event to the installation that turned auto-pause off goes to its receiver as before.
      const optedOutsDelivery = await delivery(deliveryId(firstHeld.eventId, optedOut.id));
      assert.notEqual(optedOutsDelivery.status, 'held', JSON.stringify(optedOutsDelivery));
      // A healthy installation of the same tenant is not held back.
      const healthyEvent = await send('up');
      const [healthyDelivery] = await platform.finalDeliveries([deliveryId(healthyEvent, healthy.id)], tenant.token);
      assert.equal(healthyDelivery.status, 'delivered');

      const heldIds = [firstHeld.eventId, await send('down'), await send('down')].map((eventId) => deliveryId(eventId, held.id));
      for (const id of heldIds) assert.equal((await delivery(id)).status, 'held', id);
      // Counted apart from the holds of paused installations.
      const heldCount = (await registry.getSingleMetric('platform_deliveries_held_total')!.get()).values.find((value) => value.labels.reason === 'receiver_failing')?.value ?? 0;
      assert.ok(heldCount >= heldIds.length, `counted ${heldCount}`);
      const postsBefore = failingReceiver.requests.length;

      // A sweep while it still fails: its oldest held delivery is tried (and fails), nothing is released.
      const releaseHeld = createHeldRelease({ sweeps: platform.stores.sweeps, client: platform.client, logger: platform.parts.settings.logger, taskQueue: platform.taskQueue });
      const tries = await releaseHeld.sweep(Date.now() + 1, 1000);
      assert.deepEqual(tries.map((tried) => tried.id), [heldIds[0]], 'the oldest held, alone');
      await platform.parts.ingest.handOverRecorded(tries);
      await waitFor(async () => (failingReceiver.requests.slice(postsBefore).some((request) => request.body.includes(firstHeld.eventId)) ? true : undefined), 20_000, 'the try sent');
      for (const id of heldIds.slice(1)) assert.equal((await delivery(id)).status, 'held', id);

      // It answers again: the try's retry is answered, its state clears, and the batch that saw it releases what was held, not the next sweep.
      answering = true;
      await waitFor(async () => (['slow', 'fast'].includes((await platform.stores.health.receiverStates()).get(held.id)?.state ?? '') ? undefined : true), 30_000, 'the receiver answering again');
      assert.equal((await platform.http('GET', `/v1/installations/${held.id}/health`, { token: tenant.token })).body.failingNow, undefined);
      const operationId = await waitFor(async () => logged.find((line) => line.installationId === held.id && line.msg === 'held deliveries released at once: their receiver answers again')?.operation, 20_000, 'the release operation, started by the attempt batch');
      assert.deepEqual(await releaseHeld.sweep(Date.now() + 1, 1000), [], 'nothing tried: it answers');
      const operation = await waitFor(async () => {
        const answer = await platform.http('GET', `/v1/operations/${operationId}`, { token: tenant.token });
        return answer.body.status === 'done' ? answer.body : undefined;
      }, 60_000, 'the release done');
      assert.equal(operation.kind, 'release_held');
      assert.ok(operation.total >= heldIds.length - 1, JSON.stringify(operation));
      // Every event held reaches the receiver, delivered.
      const released = await waitFor(async () => {
        const now = await Promise.all(heldIds.map(delivery));
        return now.every((one) => one.status !== 'held' && one.status !== 'pending') ? now : undefined;
      }, 45_000, 'the held deliveries delivered');
      assert.deepEqual(released.map((one) => one.status), heldIds.map(() => 'delivered'));

      // New events go out again (ingest reads the cleared state within a second or so).
      await waitFor(async () => ((await delivery(deliveryId(await send('down'), held.id))).status === 'held' ? undefined : true), 20_000, 'an event not held', 300);
    } finally {
      await failingReceiver.stop();
      await healthyReceiver.stop();
    }
  });
});
