import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createAttemptBatch, type AttemptBatchInput, type AttemptBatchResult } from '../src/activities/attempt-batch';
import { AttemptRecords } from '../src/delivery-log/attempt-records';
import { createLineDrain } from '../src/activities/ordered-line';
import type { NewEvent } from '../src/delivery-log/types';
import { createLogger } from '../src/logger';
import { lineWorkflowId } from '../src/workflows/line-contract';
import { TestPlatform, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/**
 * An installation made ordered while a shard holds its deliveries: its line and the shard
 * must not both send one. The shard's batch and (in the first case) the line's drain are
 * run here in the SDK's activity environment, against the real delivery log and a real
 * receiver, so that each step comes when the test says; the platform's worker runs the
 * line the shard wakes in the second.
 */
describe('ordered delivery: an installation made ordered while its shard holds deliveries', function () {
  const platform = new TestPlatform(__filename);
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  // The first POST is answered when the test releases it: the shard's attempt stays in flight until then.
  const receiver = new ScriptedReceiver((n) => (n === 0 ? { status: 200, until: held } : { status: 200 }));
  let tenant: { org: string; token: string };

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    tenant = await platform.tenant();
  });
  // Released whatever happened: a held answer would keep the receiver from stopping.
  after(async () => (release(), Promise.all([platform.stop(), receiver.stop()])));

  const attemptBatch = () => {
    const { stores, runtime, settings, ingest } = platform.parts;
    return createAttemptBatch({ attempts: stores.attempts, installations: stores.installations, runtime, baseUrl: settings.baseUrl, webhookGuard: settings.webhookGuard, logger: createLogger('warn'), handOver: (deliveries) => ingest.handOverRecorded(deliveries) });
  };

  /** A delivery in the log, pending (or `held`) and handed to no shard: only the runs below attempt it. */
  async function pendingDelivery(installationId: string, url = receiver.url, held = false): Promise<{ eventId: string; id: string }> {
    const eventId = `evt_line_${randomBytes(4).toString('hex')}`;
    const id = `${eventId}:${installationId}`;
    const event: NewEvent = { eventId, organizationId: tenant.org, eventType: 'space_content_updated', deliveries: [{ id, eventId, installationId, organizationId: tenant.org, eventType: 'space_content_updated', body: JSON.stringify({ eventId, type: 'space_content_updated' }), url, ...(held && { held: true as const }) }] };
    await platform.stores.events.recordEvents([event]);
    return { eventId, id };
  }

  const posts = (eventId: string) => receiver.requests.filter((request) => JSON.parse(request.body).eventId === eventId).length;
  const shardInput = (id: string): AttemptBatchInput => ({ workflowId: 'delivery-shard/test', runId: `run-${randomBytes(4).toString('hex')}`, entries: [{ id, attempt: 1 }] });

  it('the line waits for the attempt the shard is making instead of taking it for interrupted and sending it again', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-a' }, receiver.url, { space_content_updated: true });
    const { eventId, id } = await pendingDelivery(hook.id);
    const attemptDeliveries = attemptBatch();
    const shardRun: Promise<AttemptBatchResult[]> = new MockActivityEnvironment({ heartbeatTimeoutMs: 5000 }).run(attemptDeliveries, shardInput(id));
    await waitFor(async () => (receiver.requests.length === 1 ? true : undefined), 30_000, 'the shard’s POST');
    const made = await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { ordered: true } });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    // The line's batches, counted: it has been told to wait at least once before the receiver answers.
    let lineBatches = 0;
    const drainLine = createLineDrain({ ...platform.parts.stores, ingest: platform.parts.ingest }, (input) => ((lineBatches += 1), attemptDeliveries(input)));
    const lineRun = new MockActivityEnvironment({ heartbeatTimeoutMs: 10_000 }).run(drainLine, hook.id);
    await waitFor(async () => (lineBatches >= 2 ? true : undefined), 30_000, 'the line asking twice');
    assert.equal(posts(eventId), 1, 'the line sent nothing while the shard’s attempt was in flight');
    release();
    assert.deepEqual((await shardRun).map(({ id: done, status }) => ({ id: done, status })), [{ id, status: 'delivered' }]);
    assert.equal(await lineRun, 'drained');
    assert.equal(posts(eventId), 1);
    const delivery = await platform.stores.deliveries.get(id);
    assert.equal(delivery?.status, 'delivered');
    assert.deepEqual(delivery?.attempts.map((attempt) => [attempt.attempt, attempt.statusCode, attempt.error]), [[1, 200, undefined]], 'one attempt, none recorded interrupted');
  });

  it('a shard’s batch leaves an ordered installation’s delivery to its line, which it wakes and which delivers it', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-b' }, receiver.url, { space_content_updated: true, ordered: true });
    const { eventId, id } = await pendingDelivery(hook.id);
    const attemptDeliveries = attemptBatch();
    assert.deepEqual(await new MockActivityEnvironment({ heartbeatTimeoutMs: 5000 }).run(attemptDeliveries, shardInput(id)), [], 'the shard forgets it');
    assert.equal(posts(eventId), 0);
    const delivery = await platform.finalDelivery(id, tenant.token, 60_000);
    assert.equal(delivery.status, 'delivered');
    assert.equal(delivery.workflow?.workflowId, lineWorkflowId(hook.id), 'made by its line');
    assert.equal(posts(eventId), 1);
  });

  it('the line reads its next delivery while the one ahead is out; another run sending and recording it meanwhile has the line’s claim refused, not sent twice', async function () {
    let answerFirst = () => undefined as void;
    const firstAnswered = new Promise<void>((resolve) => (answerFirst = resolve));
    const own = await new ScriptedReceiver((n) => (n === 0 ? { status: 200, until: firstAnswered } : { status: 200 })).start();
    try {
      const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-d' }, own.url, { space_content_updated: true });
      const [ahead, next] = [await pendingDelivery(hook.id, own.url), await pendingDelivery(hook.id, own.url)];
      const postsTo = (eventId: string) => own.requests.filter((request) => JSON.parse(request.body).eventId === eventId).length;
      assert.equal((await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { ordered: true } })).status, 200);
      const attemptDeliveries = attemptBatch();
      // The line's own reads of deliveries, once read (the batches read through the platform's records): its reads ahead.
      const log = platform.parts.stores.attempts;
      const readAhead: string[] = [];
      const lineLog = Object.assign(Object.create(log) as AttemptRecords, { toAttempt: (entries: { id: string; attempt: number }[]) => AttemptRecords.prototype.toAttempt.call(log, entries).then((found) => (readAhead.push(...entries.map((entry) => entry.id)), found)) });
      const drainLine = createLineDrain({ ...platform.parts.stores, attempts: lineLog, ingest: platform.parts.ingest }, attemptDeliveries);
      const lineRun = new MockActivityEnvironment({ heartbeatTimeoutMs: 10_000 }).run(drainLine, hook.id);
      await waitFor(async () => (postsTo(ahead.eventId) === 1 && readAhead.includes(next.id) ? true : undefined), 30_000, 'the first POST out, the next delivery read');
      // No longer ordered while the line's POST is out: a shard's batch sends the next one and records it.
      assert.equal((await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { ordered: false } })).status, 200);
      const shardRun: AttemptBatchResult[] = await new MockActivityEnvironment({ heartbeatTimeoutMs: 5000 }).run(attemptDeliveries, shardInput(next.id));
      assert.deepEqual(shardRun.map(({ status }) => status), ['delivered']);
      answerFirst();
      assert.equal(await lineRun, 'gone');
      assert.equal(postsTo(next.eventId), 1, 'the line did not send what the shard had sent');
      const delivered = await platform.stores.deliveries.get(next.id);
      assert.deepEqual(delivered?.attempts.map((attempt) => [attempt.attempt, attempt.statusCode, attempt.workflow?.workflowId]), [[1, 200, 'delivery-shard/test']]);
      assert.equal((await platform.stores.deliveries.get(ahead.id))?.status, 'delivered');
    } finally {
      answerFirst();
      await own.stop();
    }
  });

  it('the line sends nothing recorded after a held delivery (a resume releases those in the background) until it is released', async function () {
    const own = await new ScriptedReceiver().start();
    try {
      const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-e' }, own.url, { space_content_updated: true, ordered: true });
      // Held while the installation was paused; recorded after the resume, not yet released.
      const held = await pendingDelivery(hook.id, own.url, true);
      const after = await pendingDelivery(hook.id, own.url);
      let asked = 0;
      const log = platform.parts.stores.attempts;
      const lineLog = Object.assign(Object.create(log) as AttemptRecords, { oldestHeld: (installationId: string) => ((asked += 1), AttemptRecords.prototype.oldestHeld.call(log, installationId)) });
      const drainLine = createLineDrain({ ...platform.parts.stores, attempts: lineLog, ingest: platform.parts.ingest }, attemptBatch());
      const lineRun = new MockActivityEnvironment({ heartbeatTimeoutMs: 10_000 }).run(drainLine, hook.id);
      await waitFor(async () => (asked >= 3 || own.requests.length > 0 ? true : undefined), 30_000, 'the line asking again');
      assert.equal(own.requests.length, 0, 'nothing sent while what is older is held');
      // The release operation's update: pending again.
      await platform.stores.db.updateTable('deliveries').set({ status: 'pending' }).where('id', '=', held.id).execute();
      assert.equal(await lineRun, 'drained');
      assert.deepEqual(own.requests.map((request) => JSON.parse(request.body).eventId), [held.eventId, after.eventId]);
    } finally {
      await own.stop();
    }
  });

  it('two runs starting the same attempt: the first write claims it, the second gets nothing', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-c' }, receiver.url, { space_content_updated: true });
    const { id } = await pendingDelivery(hook.id);
    const started = { deliveryId: id, attempt: 1, startedAt: new Date().toISOString(), url: receiver.url };
    const [first, second] = await Promise.all([platform.stores.attempts.recordStarted([started], { workflowId: 'a', runId: '1' }), platform.stores.attempts.recordStarted([started], { workflowId: 'b', runId: '2' })]);
    assert.deepEqual([first.size, second.size].sort(), [0, 1]);
  });
});
