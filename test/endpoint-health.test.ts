import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { runCli } from './support/cli';
import { verifySignature } from '../src/webhooks/signature';

describe('endpoint health: a failing receiver paused by the platform, its events held, the organization told', function () {
  const platform = new TestPlatform(__filename);
  let failingStatus = 400;
  const failing = new ScriptedReceiver(() => ({ status: failingStatus }));
  const gone = new ScriptedReceiver(() => ({ status: 410 }));
  const operations = new ScriptedReceiver(() => ({ status: 200 }));
  let tenant: { org: string; token: string };
  let opsHook: { id: string; secret: string };

  before(async function () {
    await Promise.all([platform.start(), failing.start(), gone.start(), operations.start()]);
    tenant = await platform.tenant();
    opsHook = await platform.webhook(tenant.token, { org: tenant.org }, operations.url, { installation_paused: true, installation_resumed: true });
  });
  after(async () => Promise.all([platform.stop(), failing.stop(), gone.stop(), operations.stop()]));

  const get = (path: string) => platform.http('GET', path, { token: tenant.token });
  const ingest = async (space: string): Promise<string> => (await platform.ingest(spaceEvent(tenant.org, space))).body.deliveries[0];
  const installationOf = async (id: string) => (await get(`/v1/installations/${id}`)).body;
  const paused = (id: string) => waitFor(async () => ((await installationOf(id)).status === 'paused' ? installationOf(id) : undefined), 30_000, `${id} paused`);
  /** The operational events the organization's webhook got about an installation, verified as any delivery. */
  const told = (type: string, installationId: string) =>
    waitFor(async () => {
      const found = operations.requests.filter((request) => {
        const body = JSON.parse(request.body);
        return body.type === type && body.installation.id === installationId;
      });
      return found.length ? found : undefined;
    }, 30_000, `${type} of ${installationId}`);
  const cli = (...args: string[]) => runCli(args, { env: { ...process.env, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: tenant.token } });

  it('pauses after 20 deliveries failed in a row for its period, holds new events, and on resume delivers them and replays what failed', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-failing' }, failing.url, { space_content_updated: true, auto_pause_after_hours: 0 });
    const failed: string[] = [];
    for (let i = 0; i < 19; i++) failed.push(await ingest('sp-failing'));
    for (const id of failed) assert.equal((await platform.finalDelivery(id, tenant.token)).status, 'failed');
    const nineteen = (await get(`/v1/installations/${hook.id}/health`)).body;
    assert.equal(nineteen.consecutiveFailures, 19);
    assert.equal((await installationOf(hook.id)).status, 'active', 'not before 20 in a row');

    failed.push(await ingest('sp-failing'));
    const installation = await paused(hook.id);
    assert.equal(installation.pause.reason, 'receiver_failing');
    const first = await platform.finalDelivery(failed[0]!, tenant.token);
    assert.equal(installation.pause.troubleSince, first.createdAt, 'the trouble began with the first delivery of those failed in a row');
    const health = (await get(`/v1/installations/${hook.id}/health`)).body;
    assert.equal(health.consecutiveFailures, 20);
    assert.equal(health.failingSince, installation.pause.troubleSince);
    assert.equal(health.lastFailure.statusCode, 400);
    assert.deepEqual([health.last24h.delivered, health.last24h.failed, health.last24h.successRate], [0, 20, 0]);
    assert.equal(health.pause.reason, 'receiver_failing');
    const shown = await cli('installations', 'health', hook.id);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^Paused: receiver_failing since \S+ \(failing since \S+\)$/m);
    assert.match(shown.stdout, /^Failed in a row: 20 since /m);

    // The organization's webhook that selected it is told, signed as any delivery.
    const [pausedEvent] = await told('installation_paused', hook.id);
    const body = JSON.parse(pausedEvent!.body);
    assert.equal(body.installationId, opsHook.id);
    assert.deepEqual([body.installation.status, body.installation.pause.reason, body.installation.url], ['paused', 'receiver_failing', undefined], 'its URL (which may carry a secret) is not told');
    assert.equal(verifySignature(String(pausedEvent!.headers['x-platform-signature']), pausedEvent!.body, opsHook.secret).valid, true);

    // New events are held: recorded, not attempted.
    const held: string[] = [];
    for (let i = 0; i < 3; i++) held.push(await ingest('sp-failing'));
    for (const id of held) assert.equal((await get(`/v1/deliveries/${id}`)).body.status, 'held');
    assert.equal((await get(`/v1/deliveries?installation=${hook.id}&status=held`)).body.items.length, 3);
    const attemptsWhilePaused = failing.requests.length;

    failingStatus = 200;
    const resumed = await platform.http('POST', `/v1/installations/${hook.id}/resume`, { token: tenant.token, body: { replayFailed: true } });
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    assert.equal(resumed.body.status, 'active');
    assert.equal(resumed.body.pause, undefined);
    assert.match(resumed.body.operation, /^op_release_/);
    const operation = await platform.operationDone(resumed.body.operation, tenant.token);
    assert.deepEqual([operation.kind, operation.status, operation.total, operation.done, operation.failed], ['release_held', 'done', 23, 23, 0]);
    assert.equal(attemptsWhilePaused, 20, 'nothing was attempted while paused');
    for (const id of held) assert.equal((await platform.finalDelivery(id, tenant.token)).status, 'delivered');
    // Each event that failed since the trouble began, replayed once.
    for (const id of failed) assert.equal((await platform.finalDelivery(`${id}:replay-1`, tenant.token)).status, 'delivered');
    const eventIds = failing.requests.map((request) => JSON.parse(request.body).eventId as string);
    for (const id of failed) assert.equal(eventIds.filter((eventId) => eventId === id.split(':')[0]).length, 2, id);
    assert.equal((await get(`/v1/deliveries/${failed[0]}:replay-2`)).status, 404, 'replayed once');
    await told('installation_resumed', hook.id);
    const healed = (await get(`/v1/installations/${hook.id}/health`)).body;
    assert.equal(healed.consecutiveFailures, 0);
    assert.ok(healed.lastSuccessAt);
    assert.equal(healed.failingSince, undefined);
  });

  it('pauses at once on 410 Gone, and a resume that drops what was held skips it (CLI)', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-gone' }, gone.url, { space_content_updated: true });
    const first = await ingest('sp-gone');
    assert.equal((await platform.finalDelivery(first, tenant.token)).attempts[0].statusCode, 410);
    assert.equal((await paused(hook.id)).pause.reason, 'receiver_gone');
    // A member's pause on top keeps the platform's: what it holds stays held, for the resume to release.
    assert.equal((await platform.http('POST', `/v1/installations/${hook.id}/pause`, { token: tenant.token })).body.pause.reason, 'receiver_gone');
    const held = [await ingest('sp-gone'), await ingest('sp-gone')];
    for (const id of held) assert.equal((await get(`/v1/deliveries/${id}`)).body.status, 'held');
    const resumed = await cli('installations', 'resume', hook.id, '--held', 'drop');
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, /is active; what was held while paused is dropped by operation op_release_/);
    assert.match(resumed.stdout, /^Operation op_release_\S+ done: 2 released\.$/m);
    for (const id of held) {
      const delivery = (await get(`/v1/deliveries/${id}`)).body;
      assert.deepEqual([delivery.status, delivery.skipReason, delivery.attempts.length], ['skipped', 'held_dropped', 0]);
    }
    assert.equal(gone.requests.length, 1, 'the dropped events were never sent');
  });

  it('leaves alone an installation that turned it off, and one a member paused (its events skipped, as before); refuses a bad period naming it', async function () {
    const off = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-off' }, gone.url, { space_content_updated: true, auto_pause: false });
    const id = await ingest('sp-off');
    assert.equal((await platform.finalDelivery(id, tenant.token)).status, 'failed');
    // Its failure was counted (the health says so) and decided nothing.
    await waitFor(async () => ((await get(`/v1/installations/${off.id}/health`)).body.consecutiveFailures === 1 ? true : undefined), 10_000, 'the failure counted');
    assert.equal((await installationOf(off.id)).status, 'active');

    const member = await platform.http('POST', `/v1/installations/${off.id}/pause`, { token: tenant.token });
    assert.equal(member.body.pause.reason, 'member');
    const skipped = await ingest('sp-off');
    assert.deepEqual([(await get(`/v1/deliveries/${skipped}`)).body.status, (await get(`/v1/deliveries/${skipped}`)).body.skipReason], ['skipped', 'installation_paused']);
    const resumed = await platform.http('POST', `/v1/installations/${off.id}/resume`, { token: tenant.token });
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    assert.equal(resumed.body.operation, undefined, 'a member’s pause held nothing');
    assert.equal((await told('installation_paused', off.id))[0] !== undefined, true);

    for (const [patch, field] of [
      [{ auto_pause_after_hours: -1 }, 'configuration.auto_pause_after_hours'],
      [{ auto_pause: 'yes' }, 'configuration.auto_pause'],
    ] as const) {
      const refused = await platform.http('PATCH', `/v1/installations/${off.id}/configuration`, { token: tenant.token, body: patch });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.deepEqual(refused.body.details.map((detail: { field: string }) => detail.field), [field]);
    }
    const badResume = await platform.http('POST', `/v1/installations/${off.id}/resume`, { token: tenant.token, body: { held: 'later' } });
    assert.equal(badResume.status, 400);
    assert.equal(badResume.body.details[0].field, 'held');
  });
});
