import assert from 'node:assert/strict';
import Stripe from 'stripe';
import { EncryptionCodec } from '../src/temporal/codec';
import { TestPlatform, siteViewEvent, spaceEvent } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { idsOfOneShard } from './support/settings';

describe('a delivery to a receiver that answers 200', function () {
  const platform = new TestPlatform(__filename);
  const receiver = new ScriptedReceiver();
  let tenant: { org: string; token: string };
  let hook: { id: string; secret: string };
  let delivery: any;
  let ingest: any;
  let ingestedAt = 0;

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    tenant = await platform.tenant();
    hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'space-1' }, receiver.url, { space_content_updated: true });
    ingestedAt = Date.now();
    ingest = await platform.ingest(spaceEvent(tenant.org, 'space-1', { eventId: `evt_ok_${Date.now()}` }));
    delivery = await platform.finalDelivery(ingest.body.deliveries[0], tenant.token);
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it('is accepted with one delivery per matching installation', function () {
    assert.equal(ingest.status, 202);
    assert.deepEqual(ingest.body.deliveries, [`${ingest.body.eventId}:${hook.id}`]);
  });

  it('is delivered after exactly one attempt', function () {
    assert.equal(delivery.status, 'delivered');
    assert.equal(delivery.attempts.length, 1);
    assert.equal(delivery.attempts[0].statusCode, 200);
    assert.equal(delivery.attempts[0].responseBody, '{"received":true}');
    assert.equal(receiver.requests.length, 1);
  });

  it('sends exactly the SPEC payload fields', function () {
    const body = JSON.parse(receiver.requests[0]!.body);
    assert.deepEqual(Object.keys(body), ['eventId', 'type', 'spaceId', 'installationId', 'revisionId']);
    assert.equal(body.installationId, hook.id);
    assert.equal(body.eventId, ingest.body.eventId);
    assert.equal(receiver.requests[0]!.headers['content-type'], 'application/json');
    assert.match(String(receiver.requests[0]!.headers['user-agent']), /^platform-webhooks\/\d+\.\d+\.\d+$/);
    // Tracing is off here (no OTLP endpoint): no trace header leaves.
    assert.equal(receiver.requests[0]!.headers.traceparent, undefined);
  });

  it('carries a signature that Stripe’s own verifier accepts', function () {
    const request = receiver.requests[0]!;
    const header = String(request.headers['x-platform-signature']);
    assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
    const stripe = new Stripe('sk_test_unused');
    const event = stripe.webhooks.constructEvent(request.body, header, hook.secret) as unknown as { eventId: string };
    assert.equal(event.eventId, ingest.body.eventId);
    assert.throws(() => stripe.webhooks.constructEvent(request.body, header, `${hook.secret}x`));
  });

  it('links to the shard run whose history holds the attempt batch, encrypted', async function () {
    assert.match(delivery.workflow.workflowId, /^delivery-shard\/\d+\/\d+$/, "its shard's workflow of the epoch it was handed over in");
    assert.deepEqual(delivery.attempts[0].workflow, delivery.workflow, 'each attempt names the run that made it');
    const history = await platform.client.workflow.getHandle(delivery.workflow.workflowId, delivery.workflow.runId).fetchHistory();
    const payloads = history.events!.flatMap((event) => event.activityTaskCompletedEventAttributes?.result?.payloads ?? []);
    assert.ok(payloads.length >= 1);
    const codec = new EncryptionCodec(process.env.TEST_ENCRYPTION_KEY!);
    const results = [];
    for (const payload of payloads) {
      assert.equal(Buffer.from(payload.metadata!.encoding!).toString(), 'binary/encrypted');
      const [decoded] = await codec.decode([payload]);
      results.push(...(JSON.parse(Buffer.from(decoded!.data!).toString()) as any[]));
    }
    const [{ tookMs, ...result }] = results.filter((result) => result.id === delivery.id);
    assert.deepEqual(result, { id: delivery.id, status: 'delivered', statusCode: 200 });
    // How long after its time the attempt ended (whether its receiver is prompt): its POST's time and more.
    assert.ok(Number.isInteger(tookMs) && tookMs + 1 >= delivery.attempts[0].durationMs, `tookMs ${tookMs}, the POST ${delivery.attempts[0].durationMs} ms`);
  });

  it('answers a repeated eventId with the first ids and starts nothing new', async function () {
    const again = await platform.ingest(spaceEvent(tenant.org, 'space-1', { eventId: ingest.body.eventId }));
    assert.equal(again.status, 202);
    assert.deepEqual(again.body, ingest.body);
    await platform.untilShardsSettled(ingest.body.eventId, ingestedAt);
    assert.equal(receiver.requests.length, 1);
  });

  it('refuses (409) an eventId taken by an event of another organization or type, alone or in a batch, and answers nothing of the first', async function () {
    const other = await platform.tenant();
    for (const event of [spaceEvent(other.org, 'space-1', { eventId: ingest.body.eventId }), siteViewEvent(tenant.org, 'site-1', { eventId: ingest.body.eventId })]) {
      const taken = await platform.ingest(event);
      assert.equal(taken.status, 409, JSON.stringify(taken.body));
      assert.equal(taken.body.error, 'conflict');
      assert.ok(taken.body.message.includes(ingest.body.eventId));
      assert.equal(taken.body.deliveries, undefined);
    }
    const batch = await platform.admin('POST', '/v1/events/batch', { events: [spaceEvent(other.org, 'space-1', { eventId: ingest.body.eventId }), spaceEvent(tenant.org, 'space-1', { eventId: ingest.body.eventId })] });
    assert.equal(batch.status, 202);
    assert.equal(batch.body.results[0].error, 'conflict');
    assert.deepEqual(batch.body.results[1], ingest.body);
    await platform.untilShardsSettled(ingest.body.eventId, ingestedAt);
    assert.equal(receiver.requests.length, 1);
  });

  it('gives a new eventId to the earlier of two events in a batch, whatever this API process knew of their organizations, and names the field it refuses', async function () {
    // An organization created through another API process is not yet known to this one: its check asks the directory.
    const second = await new TestPlatform(__filename, { worker: false, adminToken: platform.adminToken, databaseUrl: platform.databaseUrl }).start();
    const unseen = await second.tenant().finally(() => second.stop());
    const eventId = `evt_order_${Date.now()}`;
    const batch = await platform.admin('POST', '/v1/events/batch', { events: [spaceEvent(unseen.org, 'space-1', { eventId }), spaceEvent(tenant.org, 'space-1', { eventId })] });
    assert.equal(batch.status, 202);
    assert.deepEqual(batch.body.results[0], { eventId, deliveries: [] });
    assert.equal(batch.body.results[1].error, 'conflict');
    assert.deepEqual(batch.body.results[1].details, [{ field: 'events[1].eventId', message: 'is taken by an earlier event' }]);
  });
});

describe('an attempt batch writes its outcomes as they come', function () {
  const platform = new TestPlatform(__filename);
  let slowArrived: number | undefined;
  /** The slow event's attempt is held 8 s (under the 10 s timeout); the other is answered at once. */
  const receiver = new ScriptedReceiver((_n, request) => {
    if (!request.body.includes('"slow"')) return { status: 200 };
    slowArrived ??= Date.now();
    return { status: 200, delayMs: 8000 };
  });
  before(async () => Promise.all([platform.start(), receiver.start()]));
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it('records a delivery answered at once while its batch still waits on a slow receiver: a worker dying then would not send it again', async function () {
    const tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'space-1' }, receiver.url, { space_content_updated: true });
    // One batch ingest to one shard and one installation: both deliveries go to the shard together, in one attempt batch.
    const [slowId, fastId] = idsOfOneShard(`together_${Date.now()}`, 2);
    const batch = await platform.admin('POST', '/v1/events/batch', {
      events: [spaceEvent(tenant.org, 'space-1', { eventId: slowId, revisionId: 'slow' }), spaceEvent(tenant.org, 'space-1', { eventId: fastId, revisionId: 'fast' })],
    });
    assert.equal(batch.status, 202);
    const [slow, fast] = batch.body.results.map((result: any) => result.deliveries[0] as string);
    const delivered = await platform.finalDelivery(fast!, tenant.token, 20_000);
    const recordedAt = Date.now();
    assert.equal(delivered.status, 'delivered');
    assert.ok(slowArrived !== undefined && recordedAt - slowArrived < 8000, 'the slow attempt is still held');
    const held = await platform.http('GET', `/v1/deliveries/${encodeURIComponent(slow!)}`, { token: tenant.token });
    assert.equal(held.body.status, 'pending');
    // In one batch: a batch of its own after the held one would have waited for it.
    assert.deepEqual(new Set(receiver.requests.map((request) => JSON.parse(request.body).revisionId)), new Set(['slow', 'fast']));
  });
});
