import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createAttemptBatch, type AttemptBatchInput, type AttemptBatchResult } from '../src/activities/attempt-batch';
import type { NewEvent } from '../src/delivery-log/types';
import { createLogger } from '../src/logger';
import { TestPlatform } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/**
 * Two runs of one attempt batch at once: the server timed the first out (its heartbeats
 * were lost while the server was away) and started a newer one, while the first still
 * waited for its retry's time. Run here in the SDK's activity environment against the real
 * delivery log and a real receiver; the cancellation is what the worker hands the first
 * run once its heartbeat is answered NOT_FOUND.
 */
describe('attempt batches: a run the server timed out beside its newer run', function () {
  const platform = new TestPlatform(__filename);
  const receiver = new ScriptedReceiver(() => ({ status: 200 }));
  let tenant: { org: string; token: string };
  let hook: { id: string };

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    tenant = await platform.tenant();
    hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp' }, receiver.url, { space_content_updated: true });
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  /** One run of the batch, as a worker of this platform makes it, in `env`. */
  const run = (env: MockActivityEnvironment, input: AttemptBatchInput): Promise<AttemptBatchResult[]> => {
    const { stores, runtime, settings } = platform.parts;
    const attemptDeliveries = createAttemptBatch({ attempts: stores.attempts, installations: stores.installations, runtime, baseUrl: settings.baseUrl, webhookGuard: settings.webhookGuard, logger: createLogger('warn') });
    return env.run(attemptDeliveries, input);
  };

  /** A delivery in the log, pending and handed to no shard: only the runs below attempt it. */
  async function pendingDelivery(): Promise<{ eventId: string; id: string }> {
    const eventId = `evt_twice_${randomBytes(4).toString('hex')}`;
    const id = `${eventId}:${hook.id}`;
    const event: NewEvent = { eventId, organizationId: tenant.org, eventType: 'space_content_updated', deliveries: [{ id, eventId, installationId: hook.id, organizationId: tenant.org, eventType: 'space_content_updated', body: JSON.stringify({ eventId, type: 'space_content_updated' }), url: receiver.url }] };
    await platform.stores.events.recordEvents([event]);
    return { eventId, id };
  }

  const posts = (eventId: string) => receiver.requests.filter((request) => JSON.parse(request.body).eventId === eventId).length;

  it('the timed-out run leaves an attempt it has not started to the newer run: the receiver gets it once, and the log one attempt', async function () {
    const { eventId, id } = await pendingDelivery();
    // A retry due in 1.5 s, as the shard hands one over ahead of its time.
    const input: AttemptBatchInput = { workflowId: 'delivery-shard/test', runId: 'run-1', entries: [{ id, attempt: 1, notBefore: Date.now() + 1500 }] };
    const [first, second] = [new MockActivityEnvironment({ attempt: 1, heartbeatTimeoutMs: 5000 }), new MockActivityEnvironment({ attempt: 2, heartbeatTimeoutMs: 5000 })];
    const firstRun = run(first, input);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const secondRun = run(second, input);
    first.cancel('NOT_FOUND');
    const [firstResult, secondResult] = await Promise.allSettled([firstRun, secondRun]);
    assert.equal(firstResult.status, 'rejected', 'the timed-out run ends cancelled: a partial answer would be taken for finished');
    assert.equal((firstResult as PromiseRejectedResult).reason.name, 'CancelledFailure');
    assert.equal(secondResult.status, 'fulfilled');
    assert.deepEqual((secondResult as PromiseFulfilledResult<AttemptBatchResult[]>).value.map(({ id: delivered, status }) => ({ id: delivered, status })), [{ id, status: 'delivered' }]);
    assert.equal(posts(eventId), 1);
    const delivery = await platform.stores.deliveries.get(id);
    assert.equal(delivery?.status, 'delivered');
    assert.equal(delivery?.attempts.length, 1);
  });

  it('a run the worker stops (its shutdown) hands the attempt it has not started back to the shard, unsent, for another worker', async function () {
    const { eventId, id } = await pendingDelivery();
    const input: AttemptBatchInput = { workflowId: 'delivery-shard/test', runId: 'run-1', entries: [{ id, attempt: 1, notBefore: Date.now() + 1500 }] };
    const env = new MockActivityEnvironment({ attempt: 1, heartbeatTimeoutMs: 5000 });
    const running = run(env, input);
    await new Promise((resolve) => setTimeout(resolve, 200));
    env.cancel('WORKER_SHUTDOWN');
    const result = await running;
    assert.deepEqual(result.map(({ id: back, status, again }) => ({ id: back, status, again })), [{ id, status: 'pending', again: true }]);
    assert.equal(posts(eventId), 0);
    assert.equal((await platform.stores.deliveries.get(id))?.attempts.length, 0);
  });
});
