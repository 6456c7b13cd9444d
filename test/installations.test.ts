import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { verifySignature } from '../src/webhooks/signature';
import { installationWorkflow, MAX_ROTATED_SECRETS, newInstallationState } from '../src/workflows/installation';
import { installationWorkflowId } from '../src/contracts/installation';
import { newSigningSecret } from '../src/api/installation-service';
import { EPOCH_MS } from '../src/workflows/shard-contract';
import { TestPlatform, spaceEvent, siteViewEvent, waitFor } from './support/platform';
import { idsOfOneShard } from './support/settings';
import { ScriptedReceiver } from './support/receiver';

describe('installations of the webhook integration', function () {
  const platform = new TestPlatform(__filename);
  const receiver = new ScriptedReceiver();
  let tenant: { org: string; token: string };

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    tenant = await platform.tenant();
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  const call = (method: string, path: string, body?: unknown) => platform.http(method, path, { token: tenant.token, body });

  it('moves pending -> active once URL and an event are set, and back when the URL is unset', async function () {
    const created = await call('POST', '/v1/integrations/webhook/installations', { target: { org: tenant.org, space: 'sp-states' } });
    assert.equal(created.status, 201);
    assert.equal(created.body.status, 'pending');
    assert.match(created.body.id, /^ins_/);
    assert.equal(created.body.urls.publicEndpoint, `${platform.api.url}/v1/integrations/webhook/installations/${created.body.id}/public`);
    const id = created.body.id;
    const withUrl = await call('PATCH', `/v1/installations/${id}/configuration`, { webhook_url: receiver.url });
    assert.equal(withUrl.body.status, 'pending', 'no event selected yet');
    const active = await call('PATCH', `/v1/installations/${id}/configuration`, { space_content_updated: true });
    assert.equal(active.status, 200);
    assert.equal(active.body.status, 'active');
    assert.deepEqual(active.body.configuration, { webhook_url: receiver.url, space_content_updated: true });
    const unset = await call('PATCH', `/v1/installations/${id}/configuration`, { webhook_url: null });
    assert.equal(unset.body.status, 'pending');
    const listed = await call('GET', `/v1/installations?org=${tenant.org}&space=sp-states`);
    assert.deepEqual(listed.body.items.map((i: any) => [i.id, i.status]), [[id, 'pending']]);
  });

  it('refuses events a target cannot select, wrong types and unknown properties, naming the field', async function () {
    const space = await call('POST', '/v1/integrations/webhook/installations', { target: { org: tenant.org, space: 'sp-x' }, configuration: { site_view: true } });
    assert.equal(space.status, 400);
    assert.equal(space.body.error, 'invalid_request');
    assert.deepEqual(space.body.details.map((d: any) => d.field), ['configuration.site_view']);
    const site = await call('POST', '/v1/integrations/webhook/installations', { target: { org: tenant.org, site: 'site-x' }, configuration: { space_content_updated: true } });
    assert.deepEqual(site.body.details.map((d: any) => d.field), ['configuration.space_content_updated']);
    const created = await call('POST', '/v1/integrations/webhook/installations', { target: { org: tenant.org, site: 'site-x' } });
    const patch = await call('PATCH', `/v1/installations/${created.body.id}/configuration`, { page_feedback: 'yes', colour: 'red', webhook_url: 'ftp://x' });
    assert.equal(patch.status, 400);
    assert.deepEqual(patch.body.details.map((d: any) => d.field).sort(), ['configuration.colour', 'configuration.page_feedback', 'configuration.webhook_url']);
    const after = await call('GET', `/v1/installations/${created.body.id}`);
    assert.deepEqual(after.body.configuration, {}, 'a refused edit changes nothing');
    // A configuration is settings, not storage: each revision is kept in history and sent in installation_setup.
    const huge = await call('PATCH', `/v1/installations/${created.body.id}/configuration`, { webhook_url: `https://example.com/${'x'.repeat(70 * 1024)}` });
    assert.deepEqual([huge.status, huge.body.error], [413, 'payload_too_large']);
    const hugeInstall = await call('POST', '/v1/integrations/webhook/installations', { target: { org: tenant.org, site: 'site-x' }, configuration: { webhook_url: `https://example.com/${'x'.repeat(70 * 1024)}` } });
    assert.equal(hugeInstall.status, 413);
  });

  it('routes site events to site installations only, and records paused ones as skipped', async function () {
    const site = await platform.webhook(tenant.token, { org: tenant.org, site: 'site-1' }, receiver.url, { site_view: true });
    const space = await platform.webhook(tenant.token, { org: tenant.org, space: 'space-1' }, receiver.url, { space_content_updated: true });
    const ingest = await platform.ingest(siteViewEvent(tenant.org, 'site-1'));
    assert.deepEqual(ingest.body.deliveries, [`${ingest.body.eventId}:${site.id}`], 'the space installation gets nothing');
    const delivered = await platform.finalDelivery(ingest.body.deliveries[0], tenant.token);
    assert.equal(delivered.status, 'delivered');
    assert.equal(JSON.parse(receiver.requests.at(-1)!.body).siteId, 'site-1');

    const paused = await call('POST', `/v1/installations/${space.id}/pause`);
    assert.equal(paused.body.status, 'paused');
    const before = receiver.requests.length;
    const skippedIngest = await platform.ingest(spaceEvent(tenant.org, 'space-1'));
    const skipped = await platform.finalDelivery(skippedIngest.body.deliveries[0], tenant.token);
    assert.equal(skipped.status, 'skipped');
    assert.equal(skipped.skipReason, 'installation_paused');
    assert.equal(skipped.attempts.length, 0);
    const resumed = await call('POST', `/v1/installations/${space.id}/resume`);
    assert.equal(resumed.body.status, 'active');
    const again = await platform.ingest(spaceEvent(tenant.org, 'space-1'));
    assert.equal((await platform.finalDelivery(again.body.deliveries[0], tenant.token)).status, 'delivered');
    assert.equal(receiver.requests.length, before + 1);
  });

  it('an installation paused between retries stops as failed, so the event stays replayable', async function () {
    // Retry-After: 5, so that the pause is answered before the retry's time on a loaded machine too.
    const failing = await new ScriptedReceiver(() => ({ status: 503, headers: { 'retry-after': '5' } })).start();
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-pause-mid' }, failing.url, { space_content_updated: true });
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp-pause-mid'));
    await waitFor(async () => (failing.requests.length >= 1 ? true : undefined), 10_000, 'a first attempt');
    await call('POST', `/v1/installations/${hook.id}/pause`);
    // From the first attempt's arrival (not from when polling saw it): its answer came after it.
    const pausedAfter = performance.now() - failing.requests[0]!.at;
    const delivery = await platform.finalDelivery(ingest.body.deliveries[0], tenant.token);
    await failing.stop();
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.failureReason, 'installation_paused');
    assert.ok(delivery.attempts.length >= 1 && delivery.attempts.length <= 2, `${delivery.attempts.length} attempts`);
    assert.equal(failing.requests.length, delivery.attempts.length);
    // A pause answered before the retry's time (5 s after the first attempt) applies to it, although the
    // retry's batch started ahead of that time: no second attempt.
    if (pausedAfter < 4900) assert.equal(delivery.attempts.length, 1, `paused ${Math.round(pausedAfter)} ms after the first attempt`);
  });

  it('an event accepted for an active installation and paused before its first attempt ends failed, not skipped: replayed after a resume, it is delivered', async function () {
    // The first event's POST takes 8 s (under the 10 s attempt timeout); the second waits behind it in the lane (one partial batch at a time), and the pause comes first.
    const slow = await new ScriptedReceiver((n) => ({ status: 200, delayMs: n === 0 ? 8000 : 0 })).start();
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-pause-queued' }, slow.url, { space_content_updated: true });
    const [firstId, queuedId] = idsOfOneShard(`queued${randomBytes(3).toString('hex')}`, 2) as [string, string];
    // Both in one epoch (its shard workflow holds the lane): sent early in one.
    while (Date.now() % EPOCH_MS > 500) await new Promise((resolve) => setTimeout(resolve, 50));
    await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sp-pause-queued', { eventId: firstId }));
    await waitFor(async () => (slow.requests.length === 1 ? true : undefined), 10_000, 'the first POST');
    const queued = await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sp-pause-queued', { eventId: queuedId }));
    assert.equal(queued.status, 202);
    await call('POST', `/v1/installations/${hook.id}/pause`);
    const delivery = await platform.finalDelivery(queued.body.deliveries[0], tenant.token);
    assert.deepEqual([delivery.status, delivery.failureReason, delivery.attempts.length], ['failed', 'installation_paused', 0]);
    await call('POST', `/v1/installations/${hook.id}/resume`);
    const replay = await platform.http('POST', `/v1/deliveries/${encodeURIComponent(delivery.id)}/replay`, { token: tenant.token });
    assert.equal(replay.status, 202, JSON.stringify(replay.body));
    assert.equal((await platform.finalDelivery(replay.body.id, tenant.token)).status, 'delivered');
    assert.deepEqual(slow.requests.map((request) => JSON.parse(request.body).eventId), [firstId, queuedId]);
    await slow.stop();
  });

  it('retries sharing a batch each read the installation as of their own time: a pause between them stops the later one', async function () {
    // Two events of one shard and epoch whose receiver answers Retry-After: 3, so that each retry
    // waits exactly 3 s: due 300 ms apart, within the shard's grouping (500 ms), and both known
    // when the first one's batch starts (1.5 s ahead of it), they go out in one batch.
    const failing = await new ScriptedReceiver(() => ({ status: 503, headers: { 'retry-after': '3' } })).start();
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-pause-batch' }, failing.url, { space_content_updated: true });
    const [firstId, secondId] = idsOfOneShard(`batch${randomBytes(3).toString('hex')}`, 2) as [string, string];
    const attemptsOf = (eventId: string) => failing.requests.filter((request) => JSON.parse(request.body).eventId === eventId);
    while (Date.now() % EPOCH_MS > 2500) await new Promise((resolve) => setTimeout(resolve, 50));
    const first = await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sp-pause-batch', { eventId: firstId }));
    await waitFor(async () => (attemptsOf(firstId).length >= 1 ? true : undefined), 10_000, "the first event's first attempt");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sp-pause-batch', { eventId: secondId }));
    await waitFor(async () => (attemptsOf(firstId).length >= 2 ? true : undefined), 10_000, "the first event's retry");
    await call('POST', `/v1/installations/${hook.id}/pause`);
    const pausedAt = performance.now();
    const [early, late] = await Promise.all([platform.finalDelivery(first.body.deliveries[0], tenant.token), platform.finalDelivery(second.body.deliveries[0], tenant.token)]);
    await failing.stop();
    assert.deepEqual([early.status, early.failureReason, early.attempts.length], ['failed', 'installation_paused', 2]);
    assert.deepEqual([late.status, late.failureReason], ['failed', 'installation_paused']);
    assert.equal(attemptsOf(secondId).length, late.attempts.length);
    // A pause answered before the later retry's time applies to it, although its batch read the
    // installation for the earlier retry (the shared read would have let it go out).
    const lateRetryDue = attemptsOf(secondId)[0]!.at + 3000;
    if (pausedAt < lateRetryDue) assert.equal(late.attempts.length, 1, `paused ${Math.round(lateRetryDue - pausedAt)} ms before the later retry was due`);
    else assert.ok(late.attempts.length <= 2);
  });

  it('a URL change and a rotation answered between attempts apply to the retry: it goes to the new URL, signed with the new secret first', async function () {
    // Retry-After: 5 leaves the PATCH and the rotation 5 s to be answered before the retry is due, on a loaded machine too.
    const before = await new ScriptedReceiver(() => ({ status: 503, headers: { 'retry-after': '5' } })).start();
    const after = await new ScriptedReceiver().start();
    try {
      const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-move-mid' }, before.url, { space_content_updated: true });
      const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp-move-mid'));
      await waitFor(async () => (before.requests.length >= 1 ? true : undefined), 10_000, 'a first attempt');
      assert.equal((await call('PATCH', `/v1/installations/${hook.id}/configuration`, { webhook_url: after.url })).status, 200);
      const rotated = await call('POST', `/v1/installations/${hook.id}/signing-secret/rotate`);
      // From the first attempt's arrival at the receiver: its answer came after it.
      const changedAfter = performance.now() - before.requests[0]!.at;
      const delivery = await platform.finalDelivery(ingest.body.deliveries[0], tenant.token);
      assert.ok(changedAfter < 4900, `changed ${Math.round(changedAfter)} ms after the first attempt: the retry may have gone first`);
      assert.equal(delivery.status, 'delivered');
      assert.deepEqual(delivery.attempts.map((a: any) => [a.url, a.statusCode]), [[before.url, 503], [after.url, 200]]);
      assert.equal(before.requests.length, 1);
      const [retry] = after.requests;
      const header = String(retry!.headers['x-platform-signature']);
      assert.equal(header.split(',v1=')[1], createHmac('sha256', rotated.body.secret).update(`${header.split(',')[0]!.slice(2)}.${retry!.body}`).digest('hex'), 'the new secret signs first');
      assert.equal(verifySignature(header, retry!.body, hook.secret).valid, true, 'the old one still verifies during its overlap');
    } finally {
      await Promise.all([before.stop(), after.stop()]);
    }
  });

  it(`keeps at most ${MAX_ROTATED_SECRETS} rotated-out secrets valid: rotated again and again, the header stays short and the oldest ends early`, async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-rotate-loop' }, receiver.url, { space_content_updated: true });
    const secrets = [hook.secret];
    for (let i = 0; i < MAX_ROTATED_SECRETS + 2; i++) secrets.unshift((await call('POST', `/v1/installations/${hook.id}/signing-secret/rotate`)).body.secret);
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp-rotate-loop'));
    assert.equal((await platform.finalDelivery(ingest.body.deliveries[0], tenant.token)).status, 'delivered');
    const request = receiver.requests.find((r) => JSON.parse(r.body).eventId === ingest.body.eventId)!;
    const header = String(request.headers['x-platform-signature']);
    assert.equal(header.split(',v1=').length - 1, 1 + MAX_ROTATED_SECRETS, header);
    const verifies = secrets.map((secret) => verifySignature(header, request.body, secret).valid);
    assert.deepEqual(verifies, [...Array(1 + MAX_ROTATED_SECRETS).fill(true), false, false], 'newest first: the two oldest no longer sign');
  });

  it('an organization installation hears events of every space and site of its organization', async function () {
    const own = await platform.tenant();
    const org = await platform.webhook(own.token, { org: own.org }, receiver.url, { space_content_updated: true, page_feedback: true });
    const ingest = await platform.ingest(spaceEvent(own.org, 'any-space'));
    assert.ok(ingest.body.deliveries.includes(`${ingest.body.eventId}:${org.id}`));
    const other = await platform.tenant();
    const foreign = await platform.ingest(spaceEvent(other.org, 'any-space'));
    assert.deepEqual(foreign.body.deliveries, [], 'another organization’s event never reaches it');
  });

  it('rotates the signing secret: both v1 signatures verify for 24 h', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-rotate' }, receiver.url, { space_content_updated: true });
    const rotated = await call('POST', `/v1/installations/${hook.id}/signing-secret/rotate`);
    assert.equal(rotated.status, 200);
    assert.match(rotated.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.notEqual(rotated.body.secret, hook.secret);
    assert.equal((await call('GET', `/v1/installations/${hook.id}/signing-secret`)).body.secret, rotated.body.secret);
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp-rotate'));
    await platform.finalDelivery(ingest.body.deliveries[0], tenant.token);
    const request = receiver.requests.find((r) => JSON.parse(r.body).eventId === ingest.body.eventId)!;
    const header = String(request.headers['x-platform-signature']);
    assert.match(header, /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    assert.equal(verifySignature(header, request.body, rotated.body.secret).valid, true);
    assert.equal(verifySignature(header, request.body, hook.secret).valid, true);
    assert.equal(verifySignature(header, request.body, 'whsec_other').valid, false);
  });

  it('deletes: the installation disappears and receives nothing more', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-delete' }, receiver.url, { space_content_updated: true });
    assert.equal((await call('DELETE', `/v1/installations/${hook.id}`)).status, 204);
    assert.equal((await call('GET', `/v1/installations/${hook.id}`)).status, 404);
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp-delete'));
    assert.deepEqual(ingest.body.deliveries, []);
  });

  it('keeps history bounded: continues as new after the limit, with its state', async function () {
    const id = `ins_can${Date.now()}`;
    const state = newInstallationState({ id, integration: 'webhook', target: { org: tenant.org, space: 'sp-can' }, signingSecret: newSigningSecret() }, new Date().toISOString());
    const handle = await platform.client.workflow.start(installationWorkflow, { workflowId: installationWorkflowId(id), taskQueue: platform.taskQueue, args: [state, 3] });
    const firstRun = handle.firstExecutionRunId;
    // Started here rather than by the API, it is readable once its first change is in the read model.
    await waitFor(async () => ((await call('GET', `/v1/installations/${id}`)).status === 200 ? true : undefined), 10_000, 'the read model');
    for (const [key, value] of [['webhook_url', receiver.url], ['space_content_updated', true], ['space_content_updated', false], ['space_content_updated', true]] as const) {
      const answer = await call('PATCH', `/v1/installations/${id}/configuration`, { [key]: value });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
    }
    const runId = await waitFor(async () => {
      const description = await platform.client.workflow.getHandle(installationWorkflowId(id)).describe();
      return description.runId !== firstRun && description.status.name === 'RUNNING' ? description.runId : undefined;
    }, 10_000, 'a new run');
    assert.notEqual(runId, firstRun);
    const current = await call('GET', `/v1/installations/${id}`);
    assert.equal(current.body.status, 'active');
    assert.deepEqual(current.body.configuration, { webhook_url: receiver.url, space_content_updated: true });
    const history = await platform.client.workflow.getHandle(installationWorkflowId(id), firstRun).fetchHistory();
    assert.ok(history.events!.length < 80, `first run history has ${history.events!.length} events`);
  });
});
