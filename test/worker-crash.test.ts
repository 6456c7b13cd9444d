import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { startWorkerProcess, untilWorkerAnswers } from './support/worker-outage';

describe('a worker killed with SIGKILL mid-delivery', function () {
  const platform = new TestPlatform(__filename, { worker: false });
  // Three 503s put deliveries into retry waits and slow answers keep others in flight when
  // the worker dies; no delivery can meet more than three failures, so all must end delivered.
  const receiver = new ScriptedReceiver((n) => (n < 3 ? { status: 503 } : { status: 200, delayMs: 1500 }));
  const deliveries: string[] = [];
  let tenant: { org: string; token: string };
  let finals: any[] = [];
  /** Deliveries the log held pending once the killed worker was gone: what the crash cut off. */
  let inFlightAtKill = 0;

  before(async function () {
    this.timeout(120_000);
    await Promise.all([platform.start(), receiver.start()]);
    let worker = await startWorkerProcess(platform);
    await untilWorkerAnswers(platform);
    tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'crash' }, receiver.url, { space_content_updated: true });
    for (let i = 0; i < 12; i++) {
      const ingest = await platform.ingest(spaceEvent(tenant.org, 'crash'));
      deliveries.push(...ingest.body.deliveries);
    }
    await waitFor(async () => (receiver.requests.length >= 4 ? true : undefined), 20_000, 'requests in flight');
    worker.kill('SIGKILL');
    await new Promise((resolve) => worker.once('exit', resolve));
    // Nothing else writes attempts: what is pending now was pending at the kill.
    inFlightAtKill = (await Promise.all(deliveries.map((id) => platform.stores.deliveries.get(id)))).filter((delivery) => delivery?.status === 'pending').length;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    worker = await startWorkerProcess(platform);
    try {
      finals = await platform.finalDeliveries(deliveries, tenant.token, 90_000);
    } finally {
      worker.kill('SIGKILL');
    }
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it('brings every delivery to a final state after a restart, losing none', function () {
    assert.equal(deliveries.length, 12);
    assert.ok(inFlightAtKill >= 1, 'the worker died with deliveries in flight');
    assert.deepEqual(finals.map((d) => d.status), Array(12).fill('delivered'));
  });

  it('every event reached the receiver (duplicates allowed, losses not)', function () {
    const seen = new Set(receiver.requests.map((r) => JSON.parse(r.body).eventId));
    for (const delivery of finals) assert.ok(seen.has(delivery.eventId), `${delivery.eventId} never arrived`);
  });
});
