import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver, type ReceivedRequest } from './support/receiver';
import { startWorkerProcess, untilWorkerAnswers } from './support/worker-outage';

const EVENTS = 100;
/** The receiver's answers to each event, in order: 503, 503, then 200, each after 150 ms. */
const SCRIPT = [503, 503, 200];

/**
 * Event by event, what the receiver saw against what the log says, through a worker killed
 * (SIGKILL) and a worker stopped (SIGTERM) under load: every request that reached the
 * receiver is an attempt in the log, with the answer the receiver gave, or recorded
 * `interrupted` where the platform never saw it; nothing is invented.
 */
describe('the audit trail through a worker SIGKILL and a SIGTERM under load', function () {
  this.timeout(300_000);
  const platform = new TestPlatform(__filename, { worker: false });
  const sent = new Map<string, number>();
  const answered = new Map<ReceivedRequest, number>();
  const receiver = new ScriptedReceiver((_n, request) => {
    const eventId = JSON.parse(request.body).eventId as string;
    const status = SCRIPT[Math.min(sent.get(eventId) ?? 0, SCRIPT.length - 1)]!;
    sent.set(eventId, (sent.get(eventId) ?? 0) + 1);
    answered.set(request, status);
    return { status, delayMs: 150 };
  });
  let tenant: { org: string; token: string };
  let worker: ChildProcess;

  /** The events' requests at the receiver, in order, each with the answer it was given (none: abandoned by the platform). */
  const requestsOf = (eventId: string) => receiver.requests.filter((request) => JSON.parse(request.body).eventId === eventId).map((request) => (request.answeredAt !== undefined ? answered.get(request) : undefined));

  /** Ingests EVENTS events to a fresh installation, stops the worker with `signal` at the 120th request, starts another, and answers every final delivery. */
  async function run(space: string, signal: NodeJS.Signals): Promise<{ deliveries: any[]; inFlightAtStop: number }> {
    await platform.webhook(tenant.token, { org: tenant.org, space }, receiver.url, { space_content_updated: true });
    const before = receiver.requests.length;
    const batch = await platform.admin('POST', '/v1/events/batch', { events: Array.from({ length: EVENTS }, () => spaceEvent(tenant.org, space)) });
    assert.equal(batch.status, 202, JSON.stringify(batch.body));
    const ids: string[] = batch.body.results.map((result: any) => result.deliveries[0]);
    await waitFor(async () => (receiver.requests.length - before >= 120 ? true : undefined), 60_000, 'the 120th request');
    worker.kill(signal);
    await new Promise((resolve) => worker.once('exit', resolve));
    // Nothing writes to the log now: what is left in flight is what the stop cut off.
    const inFlightAtStop = (await platform.stores.log.db.selectFrom('attempts_in_flight').select('delivery_id').where('delivery_id', 'in', ids).execute()).length;
    worker = await startWorkerProcess(platform);
    const deliveries = await Promise.all(ids.map((id) => platform.finalDelivery(id, tenant.token, 120_000)));
    return { deliveries, inFlightAtStop };
  }

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    worker = await startWorkerProcess(platform);
    await untilWorkerAnswers(platform);
    tenant = await platform.tenant();
  });
  after(async () => {
    worker?.kill('SIGKILL');
    await Promise.all([platform.stop(), receiver.stop()]);
  });

  it('SIGKILL: every request the receiver saw is recorded, with its answer or as interrupted; none answered 2xx ends failed; duplicates bounded by what was in flight', async function () {
    const { deliveries, inFlightAtStop } = await run('killed', 'SIGKILL');
    let duplicates = 0;
    let interrupted = 0;
    for (const delivery of deliveries) {
      const seen = requestsOf(delivery.eventId);
      const recorded = delivery.attempts.map((attempt: any) => attempt.statusCode ?? attempt.error);
      assert.equal(delivery.status, 'delivered', `${delivery.id}: receiver ${JSON.stringify(seen)}, log ${JSON.stringify(recorded)}`);
      assert.ok(recorded.length >= seen.length, `${delivery.id}: the receiver saw ${seen.length} requests, the log holds ${recorded.length}`);
      // Position by position: the answer the receiver gave, or `interrupted`, which stands for a
      // request whose answer the platform never saw, or for one that never went out (written as
      // started, then the kill): it takes a request only where more are left than answers to match.
      let s = 0;
      recorded.forEach((entry: number | string, i: number) => {
        const answersLeft = recorded.slice(i + 1).filter((later: number | string) => later !== 'interrupted').length;
        if (entry === 'interrupted') {
          interrupted += 1;
          if (seen.length - s > answersLeft) s += 1;
          return;
        }
        // An attempt the platform gave up on (a timeout on a loaded machine) reached the receiver; its answer, if any, went unseen.
        if (typeof entry === 'string') {
          assert.ok(s < seen.length, `${delivery.id}: the log's ${entry} stands for no request (receiver ${JSON.stringify(seen)}, log ${JSON.stringify(recorded)})`);
          s += 1;
          return;
        }
        assert.equal(entry, seen[s], `${delivery.id}: the log's ${entry} where the receiver answered ${seen[s]} (receiver ${JSON.stringify(seen)}, log ${JSON.stringify(recorded)})`);
        s += 1;
      });
      assert.equal(s, seen.length, `${delivery.id}: receiver ${JSON.stringify(seen)}, log ${JSON.stringify(recorded)}`);
      duplicates += Math.max(0, seen.length - SCRIPT.length);
    }
    process.stdout.write(`      SIGKILL: ${inFlightAtStop} attempts in flight at the kill, ${interrupted} recorded interrupted, ${duplicates} requests beyond the script's three\n`);
    assert.ok(duplicates <= inFlightAtStop, `${duplicates} duplicates, ${inFlightAtStop} in flight at the kill`);
  });

  it('SIGTERM: the worker finishes what it holds: every event reached the receiver exactly three times, recorded 503, 503, 200', async function () {
    const { deliveries, inFlightAtStop } = await run('stopped', 'SIGTERM');
    assert.equal(inFlightAtStop, 0, 'a graceful stop leaves no attempt in flight');
    for (const delivery of deliveries) {
      assert.deepEqual(requestsOf(delivery.eventId), SCRIPT, delivery.id);
      assert.deepEqual(delivery.attempts.map((attempt: any) => attempt.statusCode ?? attempt.error), SCRIPT, delivery.id);
      assert.equal(delivery.status, 'delivered');
    }
  });
});
