import assert from 'node:assert/strict';
import { siteViewEvent, TestPlatform, waitFor } from './support/platform';
import { install, publishExample, startWithForwarding } from './support/examples';
import { ScriptedReceiver } from './support/receiver';

/** Events to integration code through the same durable delivery pipeline as webhooks. */
describe('events to integration code', function () {
  this.timeout(120_000);
  const forwarded = new ScriptedReceiver();
  let platform: TestPlatform;
  let tenant: { org: string; token: string };
  let receiver = '';

  const forwards = (installationId: string, what: string) => forwarded.requests.map((r) => JSON.parse(r.body)).filter((f) => f.installationId === installationId && f.what === what);
  const ingest = (body: Record<string, unknown>) => platform.ingest({ organizationId: tenant.org, ...body });

  before(async function () {
    ({ platform, tenant, receiver } = await startWithForwarding(__filename, forwarded));
  });
  after(async () => Promise.all([platform?.stop(), forwarded.stop()]));

  it('fires installation_setup on install and on every configuration edit, with status and what was before; space_installation_setup once', async function () {
    const installation = await install(platform, tenant, receiver, { forward_url: forwarded.url }, 'space-a');
    const first = await waitFor(async () => forwards(installation.id, 'installation_setup')[0], 15_000, 'installation_setup');
    assert.equal(first.payload.type, 'installation_setup');
    assert.equal(first.payload.status, 'active');
    assert.deepEqual(first.payload.previous, { status: 'pending', configuration: {} });
    await platform.http('PATCH', `/v1/installations/${installation.id}/configuration`, { token: tenant.token, body: { forward_url: `${forwarded.url}?second` } });
    const second = await waitFor(async () => forwards(installation.id, 'installation_setup')[1], 15_000, 'the second installation_setup');
    assert.deepEqual(second.payload.previous, { status: 'active', configuration: { forward_url: forwarded.url } });
    // They are deliveries like any other: in the log, listed by installation.
    const spaceSetup = await waitFor(async () => forwards(installation.id, 'space_installation_setup')[0], 15_000, 'space_installation_setup');
    assert.equal(spaceSetup.payload.spaceId, 'space-a');
    // Recorded once the code's answer is: the forward it made may reach the receiver first.
    const statuses = async () => (await platform.http('GET', `/v1/deliveries?installation=${installation.id}`, { token: tenant.token })).body.items.map((d: any) => [d.eventType, d.status]).sort();
    await waitFor(async () => ((await statuses()).every(([, status]: string[]) => status !== 'pending') ? true : undefined), 15_000, 'the three recorded');
    assert.deepEqual(await statuses(), [['installation_setup', 'delivered'], ['installation_setup', 'delivered'], ['space_installation_setup', 'delivered']]);
    assert.equal(forwards(installation.id, 'space_installation_setup').length, 1);
  });

  it('delivers ingested events it handles and its scopes allow, recorded, listed and replayable', async function () {
    const installation = await install(platform, tenant, receiver, { forward_url: forwarded.url }, 'space-b');
    const answer = await ingest({ type: 'space_content_updated', spaceId: 'space-b', revisionId: 'rev-9' });
    assert.equal(answer.status, 202);
    assert.deepEqual(answer.body.deliveries, [`${answer.body.eventId}:${installation.id}`]);
    const delivery = await platform.finalDelivery(answer.body.deliveries[0], tenant.token);
    assert.equal(delivery.status, 'delivered');
    assert.equal(delivery.attempts[0].statusCode, 204);
    assert.equal(delivery.url, installation.urls.publicEndpoint);
    const heard = forwards(installation.id, 'space_content_updated');
    assert.deepEqual(heard.map((f) => f.payload), [{ type: 'space_content_updated', spaceId: 'space-b', revisionId: 'rev-9', eventId: answer.body.eventId, installationId: installation.id }]);
    const replay = await platform.http('POST', `/v1/deliveries/${encodeURIComponent(delivery.id)}/replay`, { token: tenant.token });
    assert.equal((await platform.finalDelivery(replay.body.id, tenant.token)).status, 'delivered');
    await waitFor(async () => (forwards(installation.id, 'space_content_updated').length === 2 ? true : undefined), 10_000, 'the replay');
    // Events it does not handle, or another space's, reach nothing.
    assert.deepEqual((await ingest({ type: 'space_gitsync_started', spaceId: 'space-b' })).body.deliveries, []);
    assert.deepEqual((await ingest({ type: 'space_content_updated', spaceId: 'space-elsewhere', revisionId: 'r' })).body.deliveries, []);
  });

  it('delivers site_view to a site installation whose scopes allow it (site:views:read), as GitBook does', async function () {
    const siteReceiver = await publishExample(platform, tenant, 'webhook-receiver', {
      edit: (manifest, script) => [
        `${manifest.replace('scopes: [space:content:read]', 'scopes: [site:views:read, page:feedback:read]')}\n  site:\n    properties:\n      forward_url: { type: string, title: Forward URL }\n    required: [forward_url]\n`,
        script.replace("    space_content_updated: async (event, context) => forward(context, 'space_content_updated', event),", "    site_view: async (event, context) => forward(context, 'site_view', event),"),
      ],
    });
    const created = await platform.http('POST', `/v1/integrations/${siteReceiver}/installations`, { token: tenant.token, body: { target: { org: tenant.org, site: 'site-a' }, configuration: { forward_url: forwarded.url } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const answer = await ingest(siteViewEvent(tenant.org, 'site-a'));
    assert.deepEqual(answer.body.deliveries, [`${answer.body.eventId}:${created.body.id}`]);
    assert.equal((await platform.finalDelivery(answer.body.deliveries[0], tenant.token)).status, 'delivered');
    const [heard] = await waitFor(async () => forwards(created.body.id, 'site_view').at(0) && forwards(created.body.id, 'site_view'), 10_000, 'the site_view');
    assert.equal(heard.payload.siteId, 'site-a');
    assert.deepEqual((await ingest(siteViewEvent(tenant.org, 'site-elsewhere'))).body.deliveries, [], 'another site’s views reach nothing');
  });

  it('gates events by scope: without space:content:read no content event reaches it; installation_setup always does', async function () {
    const unscoped = await publishExample(platform, tenant, 'webhook-receiver', { edit: (manifest, script) => [manifest.replace('scopes: [space:content:read]', 'scopes: []'), script] });
    const installation = await install(platform, tenant, unscoped, { forward_url: forwarded.url }, 'space-c');
    await waitFor(async () => forwards(installation.id, 'installation_setup')[0], 15_000, 'installation_setup');
    assert.deepEqual((await ingest({ type: 'space_content_updated', spaceId: 'space-c', revisionId: 'r' })).body.deliveries, []);
  });

  it('retries what answers 5xx on the schedule and fails what answers 4xx at once', async function () {
    const name = await publishExample(platform, tenant, 'webhook-receiver', {
      edit: (manifest, script) => [
        manifest.replace('scopes: [space:content:read]', 'scopes: [space:content:read, space:metadata:read]'),
        script
          .replace("import { createIntegration, type IntegrationContext } from 'integration-platform/runtime';", "import { createIntegration, ExposableError, type IntegrationContext } from 'integration-platform/runtime';")
          .replace(
            "space_content_updated: async (event, context) => forward(context, 'space_content_updated', event),",
            `space_content_updated: async () => { throw new ExposableError('this revision is refused', 422); },
    space_visibility_updated: async () => { throw new Error('a bug'); },`,
          ),
      ],
    });
    const installation = await install(platform, tenant, name, { forward_url: forwarded.url }, 'space-d');
    const refused = await ingest({ type: 'space_content_updated', spaceId: 'space-d', revisionId: 'r' });
    const broken = await ingest({ type: 'space_visibility_updated', spaceId: 'space-d', visibility: 'public' });
    const [once, retried] = await Promise.all([platform.finalDelivery(refused.body.deliveries[0], tenant.token), platform.finalDelivery(broken.body.deliveries[0], tenant.token, 60_000)]);
    assert.equal(once.status, 'failed');
    assert.deepEqual(once.attempts.map((a: any) => a.statusCode), [422]);
    assert.match(once.attempts[0].responseBody, /this revision is refused/);
    assert.equal(retried.status, 'failed');
    assert.deepEqual(retried.attempts.map((a: any) => a.statusCode), [500, 500, 500, 500]);
    assert.doesNotMatch(retried.attempts[0].responseBody, /a bug|at /, 'no stack, no message of an unexposed error');
    assert.deepEqual(retried.attempts.slice(0, 3).map((a: any) => a.nextDelayMs >= 1000 * 2 ** a.attempt / 2 && a.nextDelayMs <= 1100 * 2 ** a.attempt / 2), [true, true, true]);
    assert.equal(installation.status, 'active');
  });

  it('refuses the platform’s own events at ingest', async function () {
    for (const type of ['installation_setup', 'space_installation_setup', 'ui_render']) {
      const answer = await ingest({ type, spaceId: 's' });
      assert.equal(answer.status, 400, type);
      assert.match(answer.body.message, /is the platform's own event/);
    }
    const schemas = await platform.http('GET', '/schemas/events.json');
    assert.deepEqual(Object.keys(schemas.body).sort(), ['page_feedback', 'site_view', 'space_content_updated', 'space_gitsync_completed', 'space_gitsync_started', 'space_view', 'space_visibility_updated']);
  });
});
