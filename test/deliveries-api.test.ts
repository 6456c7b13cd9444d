import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { NewEvent } from '../src/delivery-log/types';
import { retentionWorkflow } from '../src/workflows/retention';
import { strandedDeliveriesWorkflow } from '../src/workflows/stranded';
import { ShardClient } from '../src/ingest/shard-client';
import { registry } from '../src/metrics';
import { DELIVERY_SHARDS } from './support/settings';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

describe('listing and replaying deliveries', function () {
  const platform = new TestPlatform(__filename);
  let failing = true;
  const receiver = new ScriptedReceiver(() => ({ status: failing ? 400 : 200 }));
  let tenant: { org: string; token: string };
  let hook: { id: string };
  let failedIds: string[] = [];
  let startedAt = '';

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    tenant = await platform.tenant();
    hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp' }, receiver.url, { space_content_updated: true });
    startedAt = new Date(Date.now() - 1000).toISOString();
    const ingests = await Promise.all([1, 2, 3].map(() => platform.ingest(spaceEvent(tenant.org, 'sp'))));
    failedIds = ingests.map((i) => i.body.deliveries[0]);
    for (const id of failedIds) assert.equal((await platform.finalDelivery(id, tenant.token)).status, 'failed');
    failing = false;
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  const get = (path: string) => platform.http('GET', path, { token: tenant.token });
  const listed = (query: string, count: number) =>
    waitFor(async () => {
      const answer = await get(`/v1/deliveries?${query}`);
      return answer.body.items?.length === count ? answer.body : undefined;
    }, 15_000, `${count} deliveries for ${query}`);

  it('shows each attempt of a delivery', async function () {
    const delivery = (await get(`/v1/deliveries/${failedIds[0]}`)).body;
    assert.equal(delivery.installationId, hook.id);
    assert.equal(delivery.eventType, 'space_content_updated');
    assert.equal(delivery.url, receiver.url);
    assert.equal(delivery.attempts.length, 1);
    const [attempt] = delivery.attempts;
    assert.equal(attempt.attempt, 1);
    assert.equal(attempt.statusCode, 400);
    assert.ok(Date.parse(attempt.startedAt) >= Date.parse(startedAt));
    assert.equal(typeof attempt.durationMs, 'number');
  });

  it('lists and filters by installation, status, event type, eventId, since and until, with pages', async function () {
    const all = await listed(`installation=${hook.id}&status=failed`, 3);
    assert.deepEqual(all.items.map((d: any) => d.id).sort(), [...failedIds].sort());
    assert.ok(all.items.every((d: any) => d.status === 'failed' && d.installationId === hook.id && d.eventType === 'space_content_updated'));
    // By event type: the organization's (its own index), and within an installation or a status.
    for (const query of ['eventType=space_content_updated', `eventType=space_content_updated&installation=${hook.id}`, 'eventType=space_content_updated&status=failed']) {
      assert.deepEqual((await get(`/v1/deliveries?${query}`)).body.items.map((d: any) => d.id).sort(), [...failedIds].sort(), query);
    }
    for (const query of ['eventType=site_view', `eventType=installation_paused&installation=${hook.id}`, 'eventType=space_content_updated&status=delivered']) {
      assert.deepEqual((await get(`/v1/deliveries?${query}`)).body.items, [], query);
    }
    const pageOfOne = await get('/v1/deliveries?eventType=space_content_updated&limit=1');
    const next = await get(`/v1/deliveries?eventType=space_content_updated&limit=1&pageToken=${pageOfOne.body.nextPageToken}`);
    assert.notEqual(next.body.items[0].id, pageOfOne.body.items[0].id);
    assert.equal(next.body.items[0].eventType, 'space_content_updated');
    const eventId = failedIds[1]!.split(':')[0];
    assert.deepEqual((await listed(`eventId=${eventId}`, 1)).items[0].id, failedIds[1]);
    assert.equal((await get(`/v1/deliveries?installation=${hook.id}&status=delivered`)).body.items.length, 0);
    assert.equal((await get(`/v1/deliveries?installation=${hook.id}&since=${new Date(Date.now() + 60_000).toISOString()}`)).body.items.length, 0);
    assert.equal((await get(`/v1/deliveries?installation=${hook.id}&until=${startedAt}`)).body.items.length, 0);
    assert.equal((await get(`/v1/deliveries?org=${tenant.org}&status=failed&until=${new Date().toISOString()}`)).body.items.length, 3);
    const first = await get(`/v1/deliveries?installation=${hook.id}&limit=2`);
    assert.equal(first.body.items.length, 2);
    assert.ok(first.body.nextPageToken);
    const second = await get(`/v1/deliveries?installation=${hook.id}&limit=2&pageToken=${first.body.nextPageToken}`);
    assert.equal(second.body.items.length, 1);
    assert.equal(new Set([...first.body.items, ...second.body.items].map((d: any) => d.id)).size, 3);
  });

  it('refuses a bad filter with 400 naming it', async function () {
    const answer = await get(`/v1/deliveries?status=lost&eventType=space_updated&since=yesterday&until=later&pageToken=${encodeURIComponent('not a token!')}`);
    assert.equal(answer.status, 400);
    assert.deepEqual(answer.body.details.map((d: any) => d.field), ['status', 'eventType', 'since', 'until', 'pageToken']);
    // Event types are the catalog's names: what ingest takes, operational events, installations' setup.
    const eventType = answer.body.details[1].message;
    for (const type of ['space_content_updated', 'site_view', 'space_gitsync_completed', 'installation_paused', 'installation_setup']) assert.ok(eventType.includes(type), eventType);
    assert.deepEqual((await get('/v1/deliveries?since=%2B275760-09-13T00:00:00.000Z')).body.details.map((d: any) => d.field), ['since']);
    // Times as bulk replay takes them (RFC 3339, with an offset), not whatever Date.parse reads; pages of 1 to 200.
    for (const query of ['since=2026', 'since=1', 'until=Nov%2022%202026', 'since=2026-11-22T10:00:00', 'limit=0', 'limit=201', 'limit=1e2', 'eventType=', 'eventType=ui_render', 'eventType=SITE_VIEW']) {
      const refused = await get(`/v1/deliveries?${query}`);
      assert.equal(refused.status, 400, query);
      assert.deepEqual(refused.body.details.map((d: any) => d.field), [query.split('=')[0]], query);
    }
    assert.equal((await get('/v1/deliveries?since=2026-11-22T10:00:00%2B01:00&limit=200')).status, 200);
    assert.equal((await get('/v1/deliveries?since=1970-01-01T00:00:00Z')).status, 200, 'the epoch is a time like any other');
    const forged = await get(`/v1/deliveries?installation=${hook.id}&pageToken=Zm9yZ2Vk.AAAAAAAAAAAAAAAAAAAAAA`);
    assert.equal(forged.status, 400, JSON.stringify(forged.body));
    assert.deepEqual(forged.body.details, [{ field: 'pageToken', message: 'is not valid' }]);
    const leap = await platform.http('POST', '/v1/deliveries/replay', { token: tenant.token, body: { installation: hook.id, status: 'failed', since: '2016-12-31T23:59:60Z' } });
    assert.equal(leap.status, 400);
    assert.deepEqual(leap.body.details.map((d: any) => d.field), ['since']);
  });

  it('replays one delivery: a new delivery, same body and eventId', async function () {
    const original = failedIds[0]!;
    const answer = await platform.http('POST', `/v1/deliveries/${original}/replay`, { token: tenant.token });
    assert.equal(answer.status, 202);
    assert.equal(answer.body.id, `${original}:replay-1`);
    const replay = await platform.finalDelivery(answer.body.id, tenant.token);
    assert.equal(replay.status, 'delivered');
    assert.equal(replay.replayOf, original);
    const bodies = receiver.requests.filter((r) => JSON.parse(r.body).eventId === original.split(':')[0]).map((r) => r.body);
    assert.equal(bodies.length, 2, 'the receiver saw the same eventId twice');
    assert.equal(bodies[0], bodies[1], 'byte for byte');
    const again = await platform.http('POST', `/v1/deliveries/${original}/replay`, { token: tenant.token });
    assert.equal(again.body.id, `${original}:replay-2`);
    await platform.finalDelivery(again.body.id, tenant.token);
  });

  it('reads and replays the delivery of an event whose id is as long as ingest takes (200 characters)', async function () {
    const eventId = `evt_${randomBytes(98).toString('hex')}`;
    assert.equal(eventId.length, 200);
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp', { eventId }));
    assert.equal(ingest.status, 202);
    const id: string = ingest.body.deliveries[0];
    assert.ok(id.length > 200, `${id.length} characters`);
    assert.equal((await platform.finalDelivery(id, tenant.token)).eventId, eventId);
    const answer = await platform.http('POST', `/v1/deliveries/${id}/replay`, { token: tenant.token });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    assert.equal((await platform.finalDelivery(answer.body.id, tenant.token)).status, 'delivered');
    // Not a delivery's shape: not found, as any unknown id.
    assert.equal((await get(`/v1/deliveries/${eventId}:${hook.id}:replay-0`)).status, 404);
  });

  it('replays to the installation as it is: not while it is paused (409), never once it is deleted (404), alone or in bulk', async function () {
    const other = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-replay-state' }, receiver.url, { space_content_updated: true });
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp-replay-state'));
    const id: string = ingest.body.deliveries[0];
    assert.equal((await platform.finalDelivery(id, tenant.token)).status, 'delivered');
    const replayOne = () => platform.http('POST', `/v1/deliveries/${id}/replay`, { token: tenant.token });
    const replayAll = () => platform.http('POST', '/v1/deliveries/replay', { token: tenant.token, body: { installation: other.id, status: 'failed' } });
    assert.equal((await platform.http('POST', `/v1/installations/${other.id}/pause`, { token: tenant.token })).status, 200);
    for (const answer of [await replayOne(), await replayAll()]) {
      assert.equal(answer.status, 409, JSON.stringify(answer.body));
      assert.deepEqual(answer.body.details, [{ field: 'installation', message: 'is paused' }]);
    }
    assert.equal((await platform.http('POST', `/v1/installations/${other.id}/resume`, { token: tenant.token })).status, 200);
    const resumed = await replayOne();
    assert.equal(resumed.status, 202);
    assert.equal((await platform.finalDelivery(resumed.body.id, tenant.token)).status, 'delivered');
    assert.equal((await platform.http('DELETE', `/v1/installations/${other.id}`, { token: tenant.token })).status, 204);
    for (const answer of [await replayOne(), await replayAll()]) assert.equal(answer.status, 404, JSON.stringify(answer.body));
    // Its history stays readable.
    assert.equal((await get(`/v1/deliveries/${id}`)).status, 200);
  });

  it('bulk-replays the failed deliveries of an installation in a time range, once per event, as a background operation', async function () {
    await listed(`installation=${hook.id}&status=failed`, 3);
    const answer = await platform.http('POST', '/v1/deliveries/replay', { token: tenant.token, body: { installation: hook.id, status: 'failed', since: startedAt, until: new Date().toISOString() } });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    assert.equal(answer.body.count, 3);
    assert.match(answer.body.operation, /^op_/);
    const operation = await platform.operationDone(answer.body.operation, tenant.token);
    assert.deepEqual([operation.kind, operation.status, operation.total, operation.done, operation.failed, operation.left], ['replay_failed', 'done', 3, 3, 0, 0]);
    for (const id of failedIds) {
      const eventId = id.split(':')[0];
      const replays = (await listed(`eventId=${eventId}&installation=${hook.id}`, id === failedIds[0] ? 4 : 2)).items.filter((d: any) => d.replayOf === id);
      const fromOperation = replays.filter((d: any) => Date.parse(d.createdAt) >= Date.parse(operation.createdAt));
      assert.equal(fromOperation.length, 1, `${eventId} replayed once by the operation`);
      assert.equal((await platform.finalDelivery(fromOperation[0].id, tenant.token)).status, 'delivered');
    }
    for (const id of failedIds.slice(1)) {
      const eventId = id.split(':')[0];
      assert.equal(receiver.requests.filter((r) => JSON.parse(r.body).eventId === eventId).length, 2, `${eventId} seen again`);
    }
    const none = await platform.http('POST', '/v1/deliveries/replay', { token: tenant.token, body: { installation: hook.id, status: 'failed', until: startedAt } });
    assert.equal(none.body.count, 0);
    assert.equal((await platform.operationDone(none.body.operation, tenant.token)).done, 0);
    const bad = await platform.http('POST', '/v1/deliveries/replay', { token: tenant.token, body: { installation: hook.id, status: 'delivered' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.details[0].field, 'status');
    // Another organization's member does not see it.
    const stranger = await platform.tenant();
    assert.equal((await platform.http('GET', `/v1/operations/${answer.body.operation}`, { token: stranger.token })).status, 404);
    assert.equal((await platform.http('GET', '/v1/operations/op_none', { token: tenant.token })).status, 404);
  });

  it('the retention workflow purges, through its activity, what is older than PLATFORM_DELIVERY_RETENTION_DAYS, and keeps the rest', async function () {
    const org = `org-retention-${randomBytes(3).toString('hex')}`;
    // Final (skipped) unless pending: a pending one stays, however old.
    const recorded = (eventId: string, pending = false): NewEvent => ({ eventId, organizationId: org, eventType: 'space_content_updated', deliveries: [{ id: `${eventId}:ins_r`, eventId, installationId: 'ins_r', organizationId: org, eventType: 'space_content_updated', body: '{}', url: 'https://example.com/hook', ...(!pending && { skipReason: 'installation_paused' }) }] });
    // Older than the worker's 30 days; more than one purge step would take with a limit of 1.
    await platform.stores.events.recordEvents([recorded(`evt_${org}_old_1`), recorded(`evt_${org}_old_2`), recorded(`evt_${org}_old_pending`, true)], Date.now() - 31 * 86_400_000);
    await platform.stores.events.recordEvents([recorded(`evt_${org}_recent`)], Date.now() - 29 * 86_400_000);
    const handle = await platform.client.workflow.start(retentionWorkflow, { workflowId: `retention-test-${org}`, taskQueue: platform.taskQueue });
    try {
      // Event records go a step after their last delivery: wait for those too.
      const eventLeft = async (eventId: string) => (await platform.stores.db.selectFrom('events').select('event_id').where('event_id', '=', eventId).executeTakeFirst()) !== undefined;
      await waitFor(async () => ((await platform.stores.deliveries.get(`evt_${org}_old_2:ins_r`)) === undefined && !(await eventLeft(`evt_${org}_old_1`)) && !(await eventLeft(`evt_${org}_old_2`)) ? true : undefined), 20_000, 'the purge');
      assert.ok(await platform.stores.deliveries.get(`evt_${org}_recent:ins_r`));
      assert.equal((await platform.stores.deliveries.get(`evt_${org}_old_pending:ins_r`))?.status, 'pending');
      assert.equal((await platform.stores.events.recordEvents([recorded(`evt_${org}_old_1`)])).get(`evt_${org}_old_1`)!.fresh, true, 'its dedupe record went too');
    } finally {
      await handle.terminate();
    }
  });
  it('hands a delivery recorded but never handed over (an ingest that answered 503, never retried) to its shard a minute on, once', async function () {
    const eventId = `evt_stranded_${randomBytes(4).toString('hex')}`;
    const stranded: NewEvent = { eventId, organizationId: tenant.org, eventType: 'space_content_updated', deliveries: [{ id: `${eventId}:${hook.id}`, eventId, installationId: hook.id, organizationId: tenant.org, eventType: 'space_content_updated', body: JSON.stringify({ eventId, type: 'space_content_updated' }), url: receiver.url }] };
    const recordedAt = Date.now() - 90_000;
    await platform.stores.events.recordEvents([stranded], recordedAt);
    // A sweep of its own, and the namespace's own (a minute apart): the shard attempts it once whoever hands it over.
    const handle = await platform.client.workflow.start(strandedDeliveriesWorkflow, { workflowId: `stranded-test-${eventId}`, taskQueue: platform.taskQueue });
    try {
      const delivery = await platform.finalDelivery(`${eventId}:${hook.id}`, tenant.token);
      assert.equal(delivery.status, 'delivered');
      await platform.untilShardsSettled(eventId, recordedAt);
      assert.equal(receiver.requests.filter((request) => JSON.parse(request.body).eventId === eventId).length, 1);
    } finally {
      await handle.terminate();
    }
  });
  it('hands a retry whose shard run ended without it (pending, attempted, 15 minutes on) to its shard again: its recorded attempt is not sent again', async function () {
    const eventId = `evt_overdue_${randomBytes(4).toString('hex')}`;
    const id = `${eventId}:${hook.id}`;
    const recordedAt = Date.now() - 20 * 60_000;
    const overdue: NewEvent = { eventId, organizationId: tenant.org, eventType: 'space_content_updated', deliveries: [{ id, eventId, installationId: hook.id, organizationId: tenant.org, eventType: 'space_content_updated', body: JSON.stringify({ eventId, type: 'space_content_updated' }), url: receiver.url }] };
    await platform.stores.events.recordEvents([overdue], recordedAt);
    await platform.stores.attempts.recordOutcomes([{ id, status: 'pending', attempt: { attempt: 1, startedAt: new Date(recordedAt).toISOString(), durationMs: 10_000, url: receiver.url, error: 'timeout', nextDelayMs: 1000 } }], { workflowId: 'delivery-shard/0/terminated', runId: 'gone' });
    const handle = await platform.client.workflow.start(strandedDeliveriesWorkflow, { workflowId: `stranded-test-${eventId}`, taskQueue: platform.taskQueue });
    try {
      const delivery = await platform.finalDelivery(id, tenant.token);
      assert.equal(delivery.status, 'delivered');
      assert.deepEqual(delivery.attempts.map((attempt: { attempt: number; error?: string; statusCode?: number }) => [attempt.attempt, attempt.error ?? attempt.statusCode]), [[1, 'timeout'], [2, 200]], 'its second attempt, as the schedule has it');
      assert.equal(receiver.requests.filter((request) => JSON.parse(request.body).eventId === eventId).length, 1);
    } finally {
      await handle.terminate();
    }
  });
  it('counts and reports a delivery a shard hands over that is not in the log (lost with the machine), and attempts nothing', async function () {
    const absent = async () => (await registry.getSingleMetric('platform_deliveries_absent_total')!.get()).values[0]?.value ?? 0;
    const counted = await absent();
    const eventId = `evt_lost_${randomBytes(4).toString('hex')}`;
    const shards = new ShardClient(platform.client, platform.taskQueue, DELIVERY_SHARDS);
    await shards.enqueue(shards.shardOf(eventId), [{ id: `${eventId}:${hook.id}`, installationId: hook.id }]);
    await waitFor(async () => ((await absent()) > counted ? true : undefined), 10_000, 'the absent delivery to be counted');
    assert.equal(receiver.requests.filter((request) => JSON.parse(request.body).eventId === eventId).length, 0);
  });
});
