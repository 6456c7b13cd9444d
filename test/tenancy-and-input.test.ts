import assert from 'node:assert/strict';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { openStores } from '../src/platform/stores';
import { TestPlatform, spaceEvent } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { testDatabaseUrl, testSettings } from './support/settings';

describe('tenancy and bad input', function () {
  const platform = new TestPlatform(__filename);
  const receiver = new ScriptedReceiver((n) => ({ status: n === 0 ? 500 : 200 }));
  let a: { org: string; token: string };
  let b: { org: string; token: string };
  let hookA: { id: string };
  let deliveryA: string;

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    [a, b] = await Promise.all([platform.tenant(), platform.tenant()]);
    hookA = await platform.webhook(a.token, { org: a.org, space: 'sp-a' }, receiver.url, { space_content_updated: true });
    const ingest = await platform.ingest(spaceEvent(a.org, 'sp-a'));
    deliveryA = ingest.body.deliveries[0];
    await platform.finalDelivery(deliveryA, a.token);
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  describe('a member of another organization', function () {
    const as = (method: string, path: string, body?: unknown) => platform.http(method, path, { token: b.token, body });

    it('cannot read, change, pause, rotate or delete its installations: 404, as if absent', async function () {
      for (const [method, path, body] of [
        ['GET', `/v1/installations/${hookA.id}`],
        ['PATCH', `/v1/installations/${hookA.id}/configuration`, { webhook_url: 'https://example.com/' }],
        ['POST', `/v1/installations/${hookA.id}/pause`],
        ['GET', `/v1/installations/${hookA.id}/signing-secret`],
        ['POST', `/v1/installations/${hookA.id}/signing-secret/rotate`],
        ['DELETE', `/v1/installations/${hookA.id}`],
      ] as const) {
        const answer = await as(method, path, body);
        assert.equal(answer.status, 404, `${method} ${path}`);
        assert.deepEqual(answer.body, { error: 'not_found', message: 'installation not found', details: [] });
      }
      const missing = await as('GET', '/v1/installations/ins_doesnotexist');
      assert.deepEqual(missing.body, { error: 'not_found', message: 'installation not found', details: [] }, 'foreign and missing look alike');
      assert.equal((await platform.http('GET', `/v1/installations/${hookA.id}`, { token: a.token })).body.status, 'active', 'untouched');
    });

    it('cannot read, list or replay its deliveries', async function () {
      assert.equal((await as('GET', `/v1/deliveries/${deliveryA}`)).status, 404);
      assert.equal((await as('POST', `/v1/deliveries/${deliveryA}/replay`)).status, 404);
      assert.equal((await as('POST', '/v1/deliveries/replay', { installation: hookA.id, status: 'failed' })).status, 404);
      assert.equal((await as('GET', `/v1/deliveries?installation=${hookA.id}`)).status, 404);
      assert.deepEqual((await as('GET', `/v1/deliveries?org=${a.org}`)).body.items, []);
      assert.deepEqual((await as('GET', `/v1/installations?org=${a.org}`)).body.items, []);
    });

    it("never receives its events, also when both organizations' events share one ingest flush", async function () {
      // Organization-wide and on a space of the same id: everything of b's own, nothing of a's.
      const receiverB = await new ScriptedReceiver().start();
      try {
        const wide = await platform.webhook(b.token, { org: b.org }, receiverB.url, { space_content_updated: true });
        const onSpace = await platform.webhook(b.token, { org: b.org, space: 'sp-a' }, receiverB.url, { space_content_updated: true });
        // One batch: its events are recorded and fanned out together.
        const batch = await platform.admin('POST', '/v1/events/batch', { events: [spaceEvent(a.org, 'sp-a'), spaceEvent(b.org, 'sp-a')] });
        assert.equal(batch.status, 202, JSON.stringify(batch.body));
        const [ofA, ofB] = batch.body.results as { eventId: string; deliveries: string[] }[];
        assert.deepEqual(ofA!.deliveries, [`${ofA!.eventId}:${hookA.id}`], "a's event goes to a's installation alone");
        assert.deepEqual(new Set(ofB!.deliveries), new Set([wide.id, onSpace.id].map((id) => `${ofB!.eventId}:${id}`)));
        await Promise.all([...ofA!.deliveries.map((id) => platform.finalDelivery(id, a.token)), ...ofB!.deliveries.map((id) => platform.finalDelivery(id, b.token))]);
        assert.deepEqual(receiverB.requests.map((request) => JSON.parse(request.body).eventId), [ofB!.eventId, ofB!.eventId]);
      } finally {
        await receiverB.stop();
      }
    });

    it('cannot install into it', async function () {
      const answer = await as('POST', '/v1/integrations/webhook/installations', { target: { org: a.org } });
      assert.equal(answer.status, 404);
    });
  });

  it('refuses missing and unknown tokens with 401, and admin routes to members with 403', async function () {
    assert.equal((await platform.http('GET', '/v1/installations')).status, 401);
    assert.equal((await platform.http('GET', '/v1/installations', { token: 'ptk_nope' })).status, 401);
    const asMember = await platform.http('POST', '/v1/events', { token: a.token, body: spaceEvent(a.org, 'sp-a') });
    assert.equal(asMember.status, 403);
    assert.equal((await platform.http('POST', '/v1/orgs', { token: a.token, body: { id: 'x', subdomain: 'x', title: 'x' } })).status, 403);
  });

  it('refuses a taken organization id or subdomain with 409', async function () {
    const again = await platform.admin('POST', '/v1/orgs', { id: `${a.org}-2`, subdomain: a.org, title: 'dup' });
    assert.equal(again.status, 409);
    assert.equal(again.body.error, 'conflict');
    const proto = await platform.admin('POST', '/v1/users', { id: `proto-${Date.now()}`, orgs: ['__proto__', 'constructor'] });
    assert.equal(proto.status, 400, 'inherited object keys are not organizations');
    assert.deepEqual(proto.body.details.map((d: any) => d.message), ['no organization "__proto__"', 'no organization "constructor"']);
    const unknownTarget = await platform.admin('POST', '/v1/integrations/webhook/installations', { target: { org: 'org-nowhere' } });
    assert.equal(unknownTarget.status, 404);
    const bySubdomain = await platform.admin('POST', '/v1/integrations/webhook/installations', { target: { org: 'not-an-id' } });
    assert.equal(bySubdomain.status, 404);
    const bad = await platform.admin('POST', '/v1/orgs', { id: 'Bad Id', subdomain: 'ok-sub', title: '' });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.details.map((d: any) => d.field), ['id', 'title']);
  });

  describe('POST /v1/events', function () {
    const post = (body: unknown) => platform.admin('POST', '/v1/events', body);

    it('bad JSON: 400 that says so', async function () {
      const answer = await platform.http('POST', '/v1/events', { token: platform.adminToken, raw: '{"type": ', headers: { 'content-type': 'application/json' } });
      assert.equal(answer.status, 400);
      assert.equal(answer.body.error, 'invalid_request');
      assert.match(answer.body.message, /JSON/i);
      assert.doesNotMatch(JSON.stringify(answer.body), /at .*\.js:\d+/, 'no stack trace');
    });

    it('a compressed body that does not decompress: 400 naming its Content-Encoding, no stack trace', async function () {
      for (const encoding of ['gzip', 'deflate', 'br']) {
        const answer = await platform.http('POST', '/v1/events/batch', { token: platform.adminToken, raw: 'xx', headers: { 'content-type': 'application/json', 'content-encoding': encoding } });
        assert.equal(answer.status, 400, `${encoding}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.body.error, 'invalid_request');
        assert.match(answer.body.message, new RegExp(`could not be read as Content-Encoding ${encoding}`));
      }
      const gzipped = await fetch(`${platform.api.url}/v1/events`, { method: 'POST', body: gzipSync(JSON.stringify(spaceEvent(a.org, 'sp-a'))), headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': 'application/json', 'content-encoding': 'gzip' } });
      assert.equal(gzipped.status, 202, 'a body that does decompress is taken');
    });

    it('unknown event type: 400 naming type', async function () {
      const answer = await post({ ...spaceEvent(a.org, 'sp-a'), type: 'space_deleted' });
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.body.details, [{ field: 'type', message: 'must be one of space_content_updated, site_view, page_feedback, space_view, space_visibility_updated, space_gitsync_started, space_gitsync_completed' }]);
    });

    it('missing and misspelt fields: 400 naming each', async function () {
      const { revisionId: _r, ...missing } = spaceEvent(a.org, 'sp-a') as Record<string, unknown>;
      const answer = await post({ ...missing, spaceid: 'x' });
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.body.details.map((d: any) => d.field).sort(), ['revisionId', 'spaceid']);
      const nested = await post({ type: 'site_view', organizationId: a.org, siteId: 's', url: 'u', referrer: '', visitor: { anonymousId: 'a', userAgent: 'u', ip: 1, cookies: {} } });
      assert.deepEqual(nested.body.details, [{ field: 'visitor.ip', message: 'must be string' }]);
    });

    it('a body over 1 MiB: 413 with a clear message', async function () {
      const answer = await post({ ...spaceEvent(a.org, 'sp-a'), revisionId: 'r'.repeat(1024 * 1024 + 10) });
      assert.equal(answer.status, 413);
      assert.equal(answer.body.error, 'payload_too_large');
      assert.match(answer.body.message, /too large/i);
    });

    it('an unknown organization: 404', async function () {
      const answer = await post(spaceEvent('org-missing', 'sp'));
      assert.equal(answer.status, 404);
    });
  });

  describe('bounded, well-formed input and output', function () {
    it('a body nested 10,000 levels deep: 400 naming the limit, nothing stored', async function () {
      const deep = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
      const answer = await platform.http('PATCH', `/v1/installations/${hookA.id}/configuration`, { token: a.token, raw: deep, headers: { 'content-type': 'application/json' } });
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.body.details, [{ field: '(body)', message: 'nests deeper than 32 levels' }]);
    });

    it('a form-encoded body where JSON is expected: 415', async function () {
      const answer = await platform.http('POST', '/v1/orgs', { token: platform.adminToken, raw: 'id=formed&subdomain=formed&title=Formed', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      assert.equal(answer.status, 415);
      assert.equal(answer.body.error, 'unsupported_media_type');
    });

    it('methods a path does not take (TRACE among them) answer 405 with Allow, in the error shape', async function () {
      // fetch() refuses to send TRACE: node:http does.
      const trace = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const request = http.request(`${platform.api.url}/v1/orgs`, { method: 'TRACE' }, (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
        });
        request.on('error', reject);
        request.end();
      });
      assert.equal(trace.status, 405);
      assert.deepEqual(Object.keys(trace.body), ['error', 'message', 'details']);
      assert.match(trace.body.message, /TRACE is not allowed on \/v1\/orgs; allowed: POST/);
      const put = await platform.http('PUT', '/v1/orgs', { token: platform.adminToken, body: {} });
      assert.equal(put.status, 405);
      assert.equal(put.body.error, 'method_not_allowed');
    });

    it('a publish over its limit says the limit in MiB', async function () {
      const answer = await platform.http('POST', '/v1/integrations', { token: a.token, body: { manifest: 'x', script: 'x'.repeat(13 * 1024 * 1024 + 10) } });
      assert.equal(answer.status, 413);
      assert.match(answer.body.message, /the limit is 13631488 bytes \(13 MiB\)/);
    });

    it('lists installations with their configuration, as the OpenAPI document says', async function () {
      const listed = await platform.http('GET', '/v1/installations', { token: a.token });
      const item = listed.body.items.find((i: any) => i.id === hookA.id);
      assert.equal(item.configuration.webhook_url, receiver.url);
    });
  });

  describe('deliveries quarantined by migration 0004 (recorded for the wrong organization)', function () {
    it('are named in a warning at each start of the API while the table holds them, and only then', async function () {
      const databaseUrl = await testDatabaseUrl('sqlite', 'quarantine_warning');
      const warnings: { msg: string; quarantined?: number }[] = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
      const start = async () => (await new TestPlatform(__filename, { taskQueue: `${platform.taskQueue}-quarantine`, databaseUrl, logger, worker: false }).start()).stop();
      const quarantineWarnings = () => warnings.filter((line) => line.msg.includes('quarantined_deliveries')).map((line) => line.quarantined);

      await start();
      assert.deepEqual(quarantineWarnings(), [], 'nothing quarantined, nothing said');
      const stores = await openStores({ url: databaseUrl, encryptionKey: testSettings().encryptionKey, namespace: 'test' });
      const now = Date.now();
      await stores.db
        .insertInto('quarantined_deliveries')
        .values(['ins_b1', 'ins_b2'].map((installation) => ({ id: `evt_leaked:${installation}`, event_id: 'evt_leaked', installation_id: installation, organization_id: 'org-b', event_organization_id: 'org-a', status: 'delivered', attempts: 1, created_at: now, quarantined_at: now })))
        .execute();
      await stores.close();
      await start();
      assert.deepEqual(quarantineWarnings(), [2]);
    });
  });
});
