import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { chunks } from '../src/delivery-log/rows';
import type { NewEvent } from '../src/delivery-log/types';
import { ApiClient } from '../src/cli/api-client';
import { followOperation } from '../src/cli/operations';
import { strandedDeliveriesWorkflow } from '../src/workflows/stranded';
import { TestPlatform, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { replaceWorker, workerProcessSuite } from './support/worker-outage';

describe('bulk replays as background operations', function () {
  const platform = new TestPlatform(__filename, { worker: false });
  const receiver = new ScriptedReceiver(() => ({ status: 200 }));
  const suite = workerProcessSuite(platform, [receiver]);

  /**
   * `count` deliveries of the installation recorded and failed (a receiver's 400) in the log
   * itself, never handed to a shard: the replay under test is all that sends them.
   */
  async function seedFailed(installationId: string, count: number): Promise<string[]> {
    const eventIds = Array.from({ length: count }, (_, i) => `evt_bulk_${installationId}_${i}`);
    const events: NewEvent[] = eventIds.map((eventId) => ({
      eventId,
      organizationId: suite.tenant.org,
      eventType: 'space_content_updated',
      deliveries: [{ id: `${eventId}:${installationId}`, eventId, installationId, organizationId: suite.tenant.org, eventType: 'space_content_updated', body: JSON.stringify({ type: 'space_content_updated', eventId }), url: receiver.url }],
    }));
    const recordedAt = Date.now() - 10_000;
    for (const part of chunks(events, 2000)) {
      await platform.stores.events.recordEvents(part, recordedAt);
      const attempt = { attempt: 1, startedAt: new Date(recordedAt).toISOString(), durationMs: 1, url: receiver.url, statusCode: 400 };
      await platform.stores.attempts.recordOutcomes(part.map((event) => ({ id: event.deliveries[0]!.id, status: 'failed' as const, attempt })), { workflowId: 'seed', runId: 'seed' });
    }
    return eventIds;
  }

  const operation = async (id: string) => (await platform.http('GET', `/v1/operations/${id}`, { token: suite.tenant.token })).body;
  const replayAll = (installation: string) => platform.http('POST', '/v1/deliveries/replay', { token: suite.tenant.token, body: { installation, status: 'failed' } });

  it('replays 20,000 failed deliveries: answers at once with the count, goes on after its worker is SIGKILLed, and replays each event exactly once', async function () {
    // A CI run's busy machine replayed them in 243-278 s (at some 75 a second) before replays gave way to new events: room to spare.
    this.timeout(900_000);
    const hook = await platform.webhook(suite.tenant.token, { org: suite.tenant.org, space: 'sp-bulk' }, receiver.url, { space_content_updated: true });
    const eventIds = await seedFailed(hook.id, 20_000);
    const asked = performance.now();
    const answer = await replayAll(hook.id);
    const answeredMs = performance.now() - asked;
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    assert.equal(answer.body.count, 20_000);
    assert.ok(JSON.stringify(answer.body).length < 200, 'the answer is the operation, not 20,000 ids');
    assert.equal((await operation(answer.body.operation)).total, 20_000, 'readable at once');
    console.log(`      bulk replay of 20,000 answered in ${answeredMs.toFixed(0)} ms`);

    const part = await waitFor(async () => {
      const now = await operation(answer.body.operation);
      return now.done >= 3000 ? now : undefined;
    }, 120_000, '3,000 replayed');
    assert.equal(part.status, 'running');
    await replaceWorker(platform, suite, 'SIGKILL');

    const done = await platform.operationDone(answer.body.operation, suite.tenant.token, 600_000);
    console.log(`      replayed in ${((performance.now() - asked) / 1000).toFixed(1)} s, a SIGKILLed worker included`);
    assert.deepEqual([done.status, done.done, done.failed, done.left], ['done', 20_000, 0, 0]);
    // Exactly one replay of each event in the log, each delivered; the receiver saw every event.
    const replays = await platform.stores.db.selectFrom('deliveries').select(['event_id', 'status']).where('installation_id', '=', hook.id).where('replay_of', 'is not', null).execute();
    assert.equal(replays.length, 20_000);
    assert.equal(new Set(replays.map((row) => row.event_id)).size, 20_000);
    await waitFor(async () => {
      const seen = new Set(receiver.requests.map((request) => JSON.parse(request.body).eventId as string));
      return eventIds.every((eventId) => seen.has(eventId)) ? true : undefined;
    }, 300_000, 'every event at the receiver');
    console.log(`      all 20,000 at the receiver ${((performance.now() - asked) / 1000).toFixed(1)} s after the call`);
    const described = await platform.client.workflow.getHandle(answer.body.operation).describe();
    assert.equal(described.status.name, 'COMPLETED', 'its workflow, in the Temporal UI');
  });

  it('is cancelled between two pages: what it replayed stays replayed, nothing more goes', async function () {
    const hook = await platform.webhook(suite.tenant.token, { org: suite.tenant.org, space: 'sp-cancel' }, receiver.url, { space_content_updated: true });
    await seedFailed(hook.id, 5000);
    const answer = await replayAll(hook.id);
    await waitFor(async () => ((await operation(answer.body.operation)).done >= 200 ? true : undefined), 60_000, 'a first page');
    const cancel = await platform.http('POST', `/v1/operations/${answer.body.operation}/cancel`, { token: suite.tenant.token });
    assert.equal(cancel.status, 202);
    const ended = await platform.operationDone(answer.body.operation, suite.tenant.token);
    assert.equal(ended.status, 'cancelled');
    assert.ok(ended.done < 5000, `${ended.done} replayed`);
    assert.equal(ended.left, 5000 - ended.done);
    const replays = await platform.stores.db.selectFrom('deliveries').select('id').where('installation_id', '=', hook.id).where('replay_of', 'is not', null).execute();
    assert.equal(replays.length, ended.done, 'the log holds what it counted');
    const stranger = await platform.tenant();
    assert.equal((await platform.http('POST', `/v1/operations/${answer.body.operation}/cancel`, { token: stranger.token })).status, 404);
  });

  it('is recorded failed once its workflow is terminated (from the Temporal UI) by the next sweep: what it replayed stays replayed, and said', async function () {
    const hook = await platform.webhook(suite.tenant.token, { org: suite.tenant.org, space: 'sp-terminated' }, receiver.url, { space_content_updated: true });
    await seedFailed(hook.id, 5000);
    const id = (await replayAll(hook.id)).body.operation as string;
    await waitFor(async () => ((await operation(id)).done >= 200 ? true : undefined), 60_000, 'a first page');
    await platform.client.workflow.getHandle(id).terminate('an operator, from the Temporal UI');
    assert.equal((await operation(id)).status, 'running', 'nothing of the operation ran to say otherwise');
    const sweep = await platform.client.workflow.start(strandedDeliveriesWorkflow, { workflowId: `stranded-test-${id}`, taskQueue: platform.taskQueue });
    try {
      const ended = await waitFor(async () => {
        const found = await operation(id);
        return found.status === 'running' ? undefined : found;
      }, 60_000, 'the sweep to record the operation ended');
      assert.equal(ended.status, 'failed');
      assert.ok(ended.finishedAt && ended.done < 5000, JSON.stringify(ended));
      // Read again: a page under way at the termination may have counted itself in since (in the transaction of its replays).
      const replays = await platform.stores.db.selectFrom('deliveries').select('id').where('installation_id', '=', hook.id).where('replay_of', 'is not', null).execute();
      assert.equal(replays.length, (await operation(id)).done, 'the log holds what it counted');
      // The CLI following it says so, and exits 1 for a script to see.
      const printed: string[] = [];
      try {
        await followOperation(new ApiClient(platform.api.url, suite.tenant.token), { json: false, print: (text) => printed.push(text) }, () => undefined, id);
        assert.equal(process.exitCode, 1);
      } finally {
        process.exitCode = undefined;
      }
      assert.match(printed.join('\n'), new RegExp(`^Operation ${id} failed: [\\d,]+ replayed\\.$`, 'm'));
    } finally {
      await sweep.terminate();
    }
  });
});
