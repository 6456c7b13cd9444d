import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import { chunks } from '../src/delivery-log/rows';
import type { NewEvent, OperationRequest } from '../src/delivery-log/types';
import { operationWorkflow } from '../src/workflows/operation';
import { strandedDeliveriesWorkflow } from '../src/workflows/stranded';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { replaceWorker, workerProcessSuite } from './support/worker-outage';

/** 30% of events get a 503 at their first POST (by a hash of the eventId: the same whoever sends it). */
const flaky = (eventId: string) => createHash('sha256').update(eventId).digest()[0]! < 77;

describe('ordered delivery: one at a time, in the order recorded', function () {
  const platform = new TestPlatform(__filename, { worker: false });
  const seen = new Map<string, number>();
  const ordered = new ScriptedReceiver((_n, request) => {
    const { eventId } = JSON.parse(request.body) as { eventId: string };
    const n = seen.get(eventId) ?? 0;
    seen.set(eventId, n + 1);
    return n === 0 && flaky(eventId) ? { status: 503 } : { status: 200 };
  });
  const other = new ScriptedReceiver(() => ({ status: 200 }));
  /** Its first POST is answered once the test says so. */
  let answerFirst = () => undefined as void;
  const firstAnswered = new Promise<void>((resolve) => (answerFirst = resolve));
  const holding = new ScriptedReceiver((n) => (n === 0 ? { status: 200, until: firstAnswered } : { status: 200 }));
  const behindHeld = new ScriptedReceiver(() => ({ status: 200 }));
  const suite = workerProcessSuite(platform, [ordered, other, holding, behindHeld]);

  /** The eventIds in the order the receiver got them, a retry of the same event next to it counted once. */
  const arrivalOrder = () => ordered.requests.map((request) => (JSON.parse(request.body) as { eventId: string }).eventId).filter((eventId, i, all) => eventId !== all[i - 1]);

  it('holds the order through 30% 503s and a SIGKILLed worker; a replay goes to the back of the line; another installation is not held', async function () {
    this.timeout(240_000);
    const hook = await platform.webhook(suite.tenant.token, { org: suite.tenant.org, space: 'sp-ordered' }, ordered.url, { space_content_updated: true, ordered: true });
    await platform.webhook(suite.tenant.token, { org: suite.tenant.org, space: 'sp-other' }, other.url, { space_content_updated: true });
    const eventIds: string[] = [];
    const send = async (count: number) => {
      for (let i = 0; i < count; i++) {
        const answer = await platform.ingest(spaceEvent(suite.tenant.org, 'sp-ordered'));
        assert.equal(answer.status, 202);
        eventIds.push(answer.body.eventId);
      }
    };
    await send(20);
    // A worker killed while the line is under way (its retries waited for in its activity).
    await waitFor(async () => (ordered.requests.length >= 8 ? true : undefined), 60_000, 'the line under way');
    await replaceWorker(platform, suite, 'SIGKILL');
    await send(20);
    // Another installation's event goes out while the line works through its backlog: it is not held behind it.
    const otherEvent = await platform.ingest(spaceEvent(suite.tenant.org, 'sp-other'));
    assert.equal((await platform.finalDelivery(otherEvent.body.deliveries[0], suite.tenant.token, 60_000)).status, 'delivered');
    const last = await platform.finalDelivery(`${eventIds.at(-1)}:${hook.id}`, suite.tenant.token, 180_000);
    assert.equal(last.status, 'delivered');
    const replay = await platform.http('POST', `/v1/deliveries/${eventIds[0]}:${hook.id}/replay`, { token: suite.tenant.token });
    assert.equal(replay.status, 202);
    await platform.finalDelivery(replay.body.id, suite.tenant.token, 60_000);
    await send(1);
    await platform.finalDelivery(`${eventIds.at(-1)}:${hook.id}`, suite.tenant.token, 60_000);

    assert.deepEqual(arrivalOrder(), [...eventIds.slice(0, 40), eventIds[0], eventIds[40]], 'each event in the order recorded, the replay at the back');
    // Never two in flight: each POST came after the one before was answered.
    for (let i = 1; i < ordered.requests.length; i++) {
      const [before, next] = [ordered.requests[i - 1]!, ordered.requests[i]!];
      if (before.answeredAt !== undefined) assert.ok(next.at >= before.answeredAt, `POST ${i} came before ${i - 1} was answered`);
    }
    const deliveries = await platform.finalDeliveries(eventIds.map((eventId) => `${eventId}:${hook.id}`), suite.tenant.token);
    assert.ok(deliveries.every((delivery) => delivery.status === 'delivered'));
    assert.ok(deliveries.some((delivery) => delivery.attempts.length > 1), 'some were retried (503) in their place');
  });

  it('reads its installation at each attempt, the next delivery read ahead or not: a pause answered while the one ahead is out holds the next back', async function () {
    this.timeout(120_000);
    const hook = await platform.webhook(suite.tenant.token, { org: suite.tenant.org, space: 'sp-held-line' }, holding.url, { space_content_updated: true, ordered: true });
    const [first, second] = [await platform.ingest(spaceEvent(suite.tenant.org, 'sp-held-line')), await platform.ingest(spaceEvent(suite.tenant.org, 'sp-held-line'))];
    await waitFor(async () => (holding.requests.length >= 1 ? true : undefined), 60_000, 'the first POST out');
    assert.equal((await platform.http('POST', `/v1/installations/${hook.id}/pause`, { token: suite.tenant.token })).status, 200);
    answerFirst();
    assert.equal((await platform.finalDelivery(`${first.body.eventId}:${hook.id}`, suite.tenant.token, 60_000)).status, 'delivered');
    const next = await platform.finalDelivery(`${second.body.eventId}:${hook.id}`, suite.tenant.token, 60_000);
    assert.deepEqual([next.status, next.failureReason, next.attempts.length], ['failed', 'installation_paused', 0], JSON.stringify(next));
    assert.equal(holding.requests.length, 1, 'nothing sent after the pause was answered');
  });

  it('goes on behind held deliveries whose release was terminated (from the Temporal UI): the next sweep records it failed and releases the rest, in order', async function () {
    this.timeout(240_000);
    const hook = await platform.webhook(suite.tenant.token, { org: suite.tenant.org, space: 'sp-behind-held' }, behindHeld.url, { space_content_updated: true, ordered: true });
    // Held since before the held sweep's minute, as a platform pause leaves them.
    const heldIds = Array.from({ length: 1200 }, (_, i) => `evt_behind_${i}_${randomBytes(3).toString('hex')}`);
    const events: NewEvent[] = heldIds.map((eventId) => ({ eventId, organizationId: suite.tenant.org, eventType: 'space_content_updated', deliveries: [{ id: `${eventId}:${hook.id}`, eventId, installationId: hook.id, organizationId: suite.tenant.org, eventType: 'space_content_updated', body: JSON.stringify({ type: 'space_content_updated', eventId }), url: behindHeld.url, held: true, heldReason: 'receiver_failing' }] }));
    for (const part of chunks(events, 500)) await platform.stores.events.recordEvents(part, Date.now() - 90_000);
    // A release, as a resume starts it, terminated after its first page.
    const release: OperationRequest = { id: `op_release_${hook.id}_terminated`, kind: 'release_held', organizationId: suite.tenant.org, installationId: hook.id, held: 'deliver' };
    const handle = await platform.client.workflow.start(operationWorkflow, { workflowId: release.id, taskQueue: platform.taskQueue, args: [release] });
    await waitFor(async () => ((await platform.stores.operations.get(release.id))?.done ?? 0) > 0 || undefined, 60_000, 'a first page released');
    await handle.terminate('an operator, from the Temporal UI');
    assert.ok((await platform.stores.operations.countHeld(hook.id)) > 0, 'some are still held');
    const later: string[] = [];
    for (let i = 0; i < 3; i++) later.push((await platform.ingest(spaceEvent(suite.tenant.org, 'sp-behind-held'))).body.eventId);

    const sweep = await platform.client.workflow.start(strandedDeliveriesWorkflow, { workflowId: `stranded-test-${hook.id}`, taskQueue: platform.taskQueue });
    try {
      assert.equal((await platform.finalDelivery(`${later.at(-1)}:${hook.id}`, suite.tenant.token, 180_000)).status, 'delivered');
    } finally {
      await sweep.terminate();
    }
    assert.equal((await platform.stores.operations.get(release.id))?.status, 'failed');
    const arrivals = behindHeld.requests.map((request) => (JSON.parse(request.body) as { eventId: string }).eventId);
    assert.deepEqual(arrivals, [...heldIds, ...later], 'every held event once, in the order recorded, then those recorded after the release began');
  });
});
