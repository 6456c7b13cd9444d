import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createAttemptBatch, type AttemptBatchResult } from '../src/activities/attempt-batch';
import { FirstAttemptLag } from '../src/activities/yielding-pace';
import type { NewEvent } from '../src/delivery-log/types';
import { createLogger } from '../src/logger';
import { TestPlatform } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/**
 * What a replay's pace reads (see YieldingPace): how long after its record each new event's
 * first attempt started on this worker. An attempt batch of the platform's own, in the SDK's
 * activity environment, against the real delivery log and a real receiver: only new
 * events count, not a replay (paced by its operation), not a throttled installation's
 * (waiting by design), not one recorded long ago (held, stranded).
 */
describe('the first-attempt lag a replay gives way to', function () {
  const platform = new TestPlatform(__filename);
  const receiver = new ScriptedReceiver(() => ({ status: 200 }));
  let tenant: { org: string; token: string };
  let hook: { id: string };
  let throttled: { id: string };

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    tenant = await platform.tenant();
    hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp' }, receiver.url, { space_content_updated: true });
    throttled = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp' }, receiver.url, { space_content_updated: true, max_per_second: 100 });
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  /** A delivery to `installationId` recorded at `recordedAt` (pending, or held), handed to no shard: only the batch below attempts it. */
  async function recorded(installationId: string, recordedAt = Date.now(), held = false): Promise<string> {
    const eventId = `evt_lag_${randomBytes(4).toString('hex')}`;
    const id = `${eventId}:${installationId}`;
    const event: NewEvent = { eventId, organizationId: tenant.org, eventType: 'space_content_updated', deliveries: [{ id, eventId, installationId, organizationId: tenant.org, eventType: 'space_content_updated', body: JSON.stringify({ eventId, type: 'space_content_updated' }), url: receiver.url, ...(held && { held: true as const }) }] };
    await platform.stores.events.recordEvents([event], recordedAt);
    return id;
  }

  /** Attempts `ids` as one batch (of the prompt lane's, or not); answers the median lag it noted (undefined: none). */
  async function lagNoted(ids: string[], prompt = true): Promise<number | undefined> {
    const { stores, runtime, settings } = platform.parts;
    const firstAttempts = new FirstAttemptLag();
    const attemptDeliveries = createAttemptBatch({ attempts: stores.attempts, installations: stores.installations, runtime, baseUrl: settings.baseUrl, webhookGuard: settings.webhookGuard, logger: createLogger('warn'), pace: stores.pace, firstAttempts });
    const from = performance.now();
    const results: AttemptBatchResult[] = await new MockActivityEnvironment({ heartbeatTimeoutMs: 5000 }).run(attemptDeliveries, { workflowId: 'delivery-shard/test', runId: 'run-1', entries: ids.map((id) => ({ id, attempt: 1 })), ...(prompt && { prompt: true as const }) });
    assert.deepEqual(results.map((result) => result.status), ids.map(() => 'delivered'));
    return firstAttempts.medianSince(from);
  }

  it('notes a new event’s first attempt, how long after its record it started', async function () {
    const before = Date.now();
    const id = await recorded(hook.id, before - 300);
    const lag = await lagNoted([id]);
    assert.ok(lag !== undefined && lag >= 300 && lag < 300 + (Date.now() - before), `lag ${lag}`);
  });

  it('does not note a replay’s, one released from a hold, a throttled installation’s, one recorded long ago, nor one outside the prompt lane', async function () {
    const original = await recorded(hook.id);
    assert.equal(await lagNoted([original]) !== undefined, true);
    const [replay] = await platform.stores.events.recordReplays([{ ...(await platform.stores.deliveries.get(original))!, url: receiver.url }]);
    const held = await recorded(hook.id, Date.now() - 1000, true);
    const released = await platform.stores.sweeps.releaseOldestHeld(hook.id);
    assert.equal(released?.id, held);
    // Older than 30 s, younger than the stranded sweep's minute (which would hand it to a shard meanwhile).
    const old = await recorded(hook.id, Date.now() - 45_000);
    assert.equal(await lagNoted([replay!.id, released!.id, await recorded(throttled.id), old]), undefined);
    assert.equal(await lagNoted([await recorded(hook.id)], false), undefined);
  });
});
