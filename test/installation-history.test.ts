import assert from 'node:assert/strict';
import { installationWorkflowId } from '../src/contracts/installation';
import { TestPlatform } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { runWorkerOf } from './support/worker-outage';

/** An installation with a long life: reads come from the read model, and its workflow's runs stay short. */
describe('an installation edited 1,000 times, then deleted', function () {
  this.timeout(600_000);
  const EDITS = 1000;
  const platform = new TestPlatform(__filename, { worker: false });
  const receiver = new ScriptedReceiver();
  let tenant: { org: string; token: string };
  let id = '';
  let secret = '';
  const call = (method: string, path: string, body?: unknown) => platform.http(method, path, { token: tenant.token, body });

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    const worker = await runWorkerOf(platform);
    try {
      tenant = await platform.tenant();
      ({ id, secret } = await platform.webhook(tenant.token, { org: tenant.org, space: 'long' }, receiver.url, { space_content_updated: true }));
      // Four at a time: the workflow takes them one after another anyway.
      for (let edit = 0; edit < EDITS; edit += 4) {
        const answers = await Promise.all([0, 1, 2, 3].map((k) => call('PATCH', `/v1/installations/${id}/configuration`, { space_content_updated: (edit + k) % 2 === 0 })));
        for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));
      }
      const last = await call('PATCH', `/v1/installations/${id}/configuration`, { space_content_updated: true });
      assert.equal(last.body.status, 'active');
    } finally {
      await worker.stop();
    }
  });
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it('keeps each run of its workflow short: it continued as new, and the current run holds a bounded history', async function () {
    const handle = platform.client.workflow.getHandle(installationWorkflowId(id));
    const { runId } = await handle.describe();
    const history = await platform.client.workflow.getHandle(installationWorkflowId(id), runId).fetchHistory();
    assert.ok(history.events!.length < 1000, `the current run holds ${history.events!.length} events`);
    assert.ok(Number(history.events![0]!.eventId) === 1 && history.events![0]!.workflowExecutionStartedEventAttributes?.continuedExecutionRunId, 'the current run was continued from an earlier one');
  });

  it('is read, with its signing secret, without any worker to replay it: from the read model', async function () {
    const read = await call('GET', `/v1/installations/${id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body.configuration, { webhook_url: receiver.url, space_content_updated: true });
    const signing = await call('GET', `/v1/installations/${id}/signing-secret`);
    assert.deepEqual([signing.status, signing.body.secret], [200, secret]);
    assert.ok((await call('GET', `/v1/installations?org=${tenant.org}`)).body.items.some((item: any) => item.id === id));
  });

  it('once deleted, answers 404 at once, to reads, to its secret and to a second delete, with no worker running', async function () {
    const worker = await runWorkerOf(platform);
    try {
      assert.equal((await call('DELETE', `/v1/installations/${id}`)).status, 204);
    } finally {
      await worker.stop();
    }
    for (const [method, path] of [['GET', `/v1/installations/${id}`], ['GET', `/v1/installations/${id}/signing-secret`], ['DELETE', `/v1/installations/${id}`], ['PATCH', `/v1/installations/${id}/configuration`]] as const) {
      const answer = await call(method, path, method === 'PATCH' ? { space_content_updated: false } : undefined);
      assert.deepEqual([answer.status, answer.body.error], [404, 'not_found'], `${method} ${path}`);
    }
  });
});
