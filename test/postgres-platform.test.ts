import assert from 'node:assert/strict';
import pg from 'pg';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

describe('the platform on PostgreSQL', function () {
  this.timeout(60_000);
  const platform = new TestPlatform(__filename, { database: 'postgres' });
  const receiver = new ScriptedReceiver((n) => (n === 0 ? { status: 503 } : { status: 200 }));

  before(async () => Promise.all([platform.start(), receiver.start()]));
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it('ingests, retries, delivers, lists and replays with the log in PostgreSQL', async function () {
    assert.match(platform.databaseUrl, /^postgres:\/\//);
    const tenant = await platform.tenant();
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'pg' }, receiver.url, { space_content_updated: true });
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'pg'));
    const delivery = await platform.finalDelivery(ingest.body.deliveries[0], tenant.token);
    assert.equal(delivery.status, 'delivered');
    assert.deepEqual(delivery.attempts.map((a: any) => a.statusCode), [503, 200]);
    const listed = await platform.http('GET', `/v1/deliveries?installation=${hook.id}`, { token: tenant.token });
    assert.deepEqual(listed.body.items.map((d: any) => d.id), [delivery.id]);
    const ofType = async (query: string) => (await platform.http('GET', `/v1/deliveries?${query}`, { token: tenant.token })).body.items.map((d: any) => d.id);
    assert.deepEqual(await ofType('eventType=space_content_updated'), [delivery.id]);
    assert.deepEqual(await ofType(`eventType=space_content_updated&installation=${hook.id}&status=delivered`), [delivery.id]);
    assert.deepEqual(await ofType('eventType=site_view'), []);
    const unknown = await platform.http('GET', '/v1/deliveries?eventType=space_updated', { token: tenant.token });
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.body.details.map((d: any) => d.field), ['eventType']);
    const replay = await platform.http('POST', `/v1/deliveries/${encodeURIComponent(delivery.id)}/replay`, { token: tenant.token });
    assert.equal((await platform.finalDelivery(replay.body.id, tenant.token)).status, 'delivered');
  });

  it('counts a receiver’s failures, pauses it on 410 Gone, holds its events and replays what failed, with the log in PostgreSQL', async function () {
    const tenant = await platform.tenant();
    const gone = new ScriptedReceiver((n) => (n === 0 ? { status: 410 } : { status: 200 }));
    await gone.start();
    try {
      const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'pg-gone' }, gone.url, { space_content_updated: true });
      const first = (await platform.ingest(spaceEvent(tenant.org, 'pg-gone'))).body.deliveries[0];
      assert.equal((await platform.finalDelivery(first, tenant.token)).status, 'failed');
      const paused = await waitFor(async () => {
        const installation = (await platform.http('GET', `/v1/installations/${hook.id}`, { token: tenant.token })).body;
        return installation.status === 'paused' ? installation : undefined;
      }, 30_000, 'the pause');
      assert.equal(paused.pause.reason, 'receiver_gone');
      const health = (await platform.http('GET', `/v1/installations/${hook.id}/health`, { token: tenant.token })).body;
      assert.deepEqual([health.consecutiveFailures, health.lastFailure.statusCode, health.last24h.failed], [1, 410, 1]);
      const held = (await platform.ingest(spaceEvent(tenant.org, 'pg-gone'))).body.deliveries[0];
      assert.equal((await platform.http('GET', `/v1/deliveries/${held}`, { token: tenant.token })).body.status, 'held');
      const resumed = await platform.http('POST', `/v1/installations/${hook.id}/resume`, { token: tenant.token, body: { replayFailed: true } });
      assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
      const operation = await platform.operationDone(resumed.body.operation, tenant.token);
      assert.deepEqual([operation.status, operation.total, operation.done], ['done', 2, 2]);
      // The held one goes out, the failed one is replayed.
      assert.equal((await platform.finalDelivery(`${first}:replay-1`, tenant.token)).status, 'delivered');
      assert.equal((await platform.finalDelivery(held, tenant.token)).status, 'delivered');
      assert.equal(gone.requests.length, 3);
      // Throttled, its send slots kept in PostgreSQL.
      await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { max_per_second: 3 } });
      const paced = await platform.admin('POST', '/v1/events/batch', { events: [1, 2, 3].map(() => spaceEvent(tenant.org, 'pg-gone')) });
      const deliveries = await platform.finalDeliveries(paced.body.results.map((result: any) => result.deliveries[0]), tenant.token);
      assert.deepEqual(deliveries.map((delivery) => [delivery.status, delivery.attempts.length]), [['delivered', 1], ['delivered', 1], ['delivered', 1]]);
      const slots = await platform.stores.db.selectFrom('installation_pace').select('next_at_us').where('installation_id', '=', hook.id).executeTakeFirstOrThrow();
      assert.ok(Number(slots.next_at_us) > (Date.now() - 60_000) * 1000, 'slots were taken');
    } finally {
      await gone.stop();
    }
  });

  it('refuses a webhook URL with control characters, naming the field: stored as written, a NUL would stop the read model (and the installation) for good', async function () {
    const tenant = await platform.tenant();
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'pg-nul' }, receiver.url, { space_content_updated: true });
    for (const url of [`${receiver.url}/a\u0000b`, `${receiver.url}\n`]) {
      const installed = await platform.http('POST', '/v1/integrations/webhook/installations', { token: tenant.token, body: { target: { org: tenant.org }, configuration: { webhook_url: url, space_content_updated: true } } });
      const edited = await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { webhook_url: url } });
      for (const answer of [installed, edited]) {
        assert.equal(answer.status, 400, JSON.stringify(answer.body));
        assert.deepEqual(answer.body.details, [{ field: 'configuration.webhook_url', message: 'must not contain control characters' }]);
      }
    }
    // The installation still answers and changes.
    assert.equal((await platform.http('POST', `/v1/installations/${hook.id}/pause`, { token: tenant.token })).status, 200);
    assert.equal((await platform.http('DELETE', `/v1/installations/${hook.id}`, { token: tenant.token })).status, 204);
  });

  it('answers 503 with Retry-After, not 500, when PostgreSQL ends the connection of a query in flight (a restart, a failover), and serves the next request', async function () {
    const tenant = await platform.tenant();
    const admin = new pg.Client({ connectionString: platform.databaseUrl });
    await admin.connect();
    try {
      // The list waits behind a lock, so that its connection can be ended while its query runs.
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE');
      const listing = platform.http('GET', '/v1/deliveries', { token: tenant.token });
      const waiting = await waitFor(async () => {
        const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()");
        return rows.length ? rows : undefined;
      }, 10_000, 'the list to wait for the lock');
      for (const { pid } of waiting) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await admin.query('ROLLBACK');
      const answer = await listing;
      assert.equal(answer.status, 503, JSON.stringify(answer.body));
      assert.equal(answer.headers.get('retry-after'), '1');
      assert.equal(answer.body.error, 'unavailable');
      // As a client would after Retry-After: a connection the pool lent again before it saw the
      // end may fail one more request; the next are served.
      await waitFor(async () => ((await platform.http('GET', '/v1/deliveries', { token: tenant.token })).status === 200 ? true : undefined), 5000, 'a request served again', 1000);
    } finally {
      await admin.end();
    }
  });
});
