import assert from 'node:assert/strict';
import type { ReceiverStanding } from '../src/delivery-log/health-reads';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { closedPortUrl, ScriptedReceiver } from './support/receiver';
import { runWorkerOf } from './support/worker-outage';

describe('a worker stopped gracefully while an attempt hangs', function () {
  const platform = new TestPlatform(__filename, { worker: false });
  let release = () => undefined as void;
  const released = new Promise<void>((resolve) => (release = resolve));
  // The first request hangs past the worker's drain; the next is answered at once.
  const receiver = new ScriptedReceiver((n) => (n === 0 ? { status: 200, until: released } : { status: 200, body: '{"received":true}' }));
  let tenant: { org: string; token: string };
  let delivery: any;
  let stopError: unknown;
  let installationId: string;
  /** An installation whose receiver refuses connections: the hints this run writes, seen (the check below is not vacuous). */
  let refusedId: string;
  let failingAfterStop: Map<string, ReceiverStanding>;

  before(async function () {
    this.timeout(120_000);
    await Promise.all([platform.start(), receiver.start()]);
    const first = await runWorkerOf(platform);
    tenant = await platform.tenant();
    refusedId = (await platform.webhook(tenant.token, { org: tenant.org, space: 'refused' }, await closedPortUrl(), { space_content_updated: true })).id;
    await platform.ingest(spaceEvent(tenant.org, 'refused'));
    await waitFor(async () => ((await platform.stores.health.receiverStates()).get(refusedId)?.state === 'fast' ? true : undefined), 30_000, 'the refused receiver written as failing');
    installationId = (await platform.webhook(tenant.token, { org: tenant.org, space: 'stop' }, receiver.url, { space_content_updated: true })).id;
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'stop'));
    await waitFor(async () => (receiver.requests.length === 1 ? true : undefined), 30_000, 'the first request');
    await first.stop().catch((err: unknown) => (stopError = err));
    failingAfterStop = await platform.stores.health.receiverStates();
    const second = await runWorkerOf(platform);
    try {
      delivery = await platform.finalDelivery(ingest.body.deliveries[0], tenant.token, 60_000);
    } finally {
      release();
      await second.stop();
    }
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it('stops without an error once the attempt is interrupted', function () {
    assert.equal(stopError, undefined);
    assert.ok(receiver.requests[0]!.abandonedAt !== undefined, 'the hanging request was ended by the stopping worker');
  });

  it('records the interrupted attempt as such (its answer unseen), and the next worker retries it on the schedule', function () {
    assert.equal(delivery.status, 'delivered');
    assert.deepEqual(delivery.attempts.map((attempt: any) => attempt.error ?? attempt.statusCode), ['interrupted', 200]);
    assert.ok(delivery.attempts[0].nextDelayMs >= 1000 && delivery.attempts[0].nextDelayMs < 1100, `wait ${delivery.attempts[0].nextDelayMs}`);
  });

  it('does not take the interruption (the platform’s failure) for its receiver failing', function () {
    assert.equal(failingAfterStop.get(refusedId)?.state, 'fast', 'a receiver that refuses is written as failing in the same run');
    assert.ok(!['slow', 'fast'].includes(failingAfterStop.get(installationId)?.state ?? ''), `written ${failingAfterStop.get(installationId)?.state}`);
  });

  it('holds one attempt for each request the receiver saw', function () {
    assert.equal(receiver.requests.length, delivery.attempts.length);
  });
});
