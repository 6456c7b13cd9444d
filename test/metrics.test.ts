import assert from 'node:assert/strict';
import { fromThisHost } from '../src/api/auth';
import { serveMetrics } from '../src/metrics/server';
import { TestPlatform, spaceEvent } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/** A sample's value from the Prometheus text format. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `) || (labels && l.startsWith(`${name}{`) && l.includes(labels)));
  return line ? Number(line.split(' ').at(-1)) : undefined;
}

describe('Prometheus metrics', function () {
  this.timeout(60_000);
  const platform = new TestPlatform(__filename);
  const receiver = new ScriptedReceiver((n) => ({ status: n === 0 ? 503 : 200 }));

  before(async () => Promise.all([platform.start(), receiver.start()]));
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it('counts what the API and the worker do: ingest, deliveries, attempts by class, retries, log lag, Temporal errors', async function () {
    const tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'm' }, receiver.url, { space_content_updated: true });
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'm'));
    assert.equal((await platform.finalDelivery(ingest.body.deliveries[0], tenant.token)).status, 'delivered');
    const ingested = async () => sample(await (await fetch(`${platform.api.url}/metrics`)).text(), 'platform_events_ingested_total', 'type="space_content_updated"')!;
    const before = await ingested();
    // A repeat is answered again, not ingested again.
    const event = { ...spaceEvent(tenant.org, 'm'), eventId: `evt_metrics_${Date.now()}` };
    for (let i = 0; i < 3; i++) assert.equal((await platform.ingest(event)).status, 202);
    assert.equal((await ingested()) - before, 1);
    const answer = await fetch(`${platform.api.url}/metrics`);
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type')!, /text\/plain/);
    const text = await answer.text();
    assert.ok(sample(text, 'platform_events_ingested_total', 'type="space_content_updated"')! >= 1, 'events ingested');
    assert.ok(sample(text, 'platform_deliveries_total', 'status="delivered",event_type="space_content_updated"')! >= 1, 'deliveries');
    assert.ok(sample(text, 'platform_attempt_duration_seconds_count', 'status_class="5xx"')! >= 1, 'the 503 attempt');
    assert.ok(sample(text, 'platform_attempt_duration_seconds_count', 'status_class="2xx"')! >= 1, 'the 200 attempt');
    assert.ok(sample(text, 'platform_retries_scheduled_total')! >= 1);
    assert.notEqual(sample(text, 'platform_retries_pending'), undefined);
    assert.ok(sample(text, 'platform_delivery_log_write_lag_seconds_count')! >= 2);
    for (const name of ['platform_publish_duration_seconds', 'platform_isolate_call_duration_seconds', 'platform_temporal_client_errors_total', 'platform_ingest_unavailable_total', 'platform_process_cpu_user_seconds_total']) {
      assert.match(text, new RegExp(`^# HELP ${name} `, 'm'), name);
    }
  });

  it('wants the administrator token from anywhere but this host', function () {
    assert.equal(fromThisHost({ req: { socket: { remoteAddress: '127.0.0.1' } } }), true);
    assert.equal(fromThisHost({ req: { socket: { remoteAddress: '::ffff:127.0.0.1' } } }), true);
    assert.equal(fromThisHost({ req: { socket: { remoteAddress: '10.0.0.7' } } }), false);
    assert.equal(fromThisHost({ req: { socket: { remoteAddress: undefined } } }), false);
  });

  it('serves the worker’s metrics on a port of its own', async function () {
    const server = await serveMetrics(0, '127.0.0.1');
    try {
      const answer = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      assert.equal(answer.status, 200);
      assert.match(await answer.text(), /^# HELP platform_deliveries_total /m);
      assert.equal((await fetch(`http://127.0.0.1:${server.port}/`)).status, 404);
    } finally {
      await server.close();
    }
  });
});
