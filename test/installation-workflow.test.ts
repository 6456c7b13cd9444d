import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client, Connection, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { InstallationProjection } from '../src/installations/types';
import { FailureType } from '../src/contracts/failures';
import { installationWorkflow, newInstallationState, type InstallationState, type NewInstallation } from '../src/workflows/installation';
import { configureUpdate, deleteUpdate, pauseUpdate } from '../src/contracts/installation';
import { namespaceFor } from './support/namespaces';
import { waitFor } from './support/platform';
import { testSettings } from './support/settings';

/**
 * The installation workflow on the run's dev server, its activities stood in for: what it
 * answers while a change is under way (the API's answers to each are tested through it).
 */
describe('the installation workflow', function () {
  this.timeout(30_000);
  const namespace = namespaceFor(__filename);

  /** Runs an installation workflow of `state` on a worker of its own, with these activities, for `use`. */
  async function withInstallation(state: InstallationState, activities: Record<string, (...args: any[]) => Promise<void>>, use: (handle: WorkflowHandle<typeof installationWorkflow>) => Promise<void>): Promise<void> {
    const taskQueue = `installation-${state.id}-${Date.now()}`;
    const worker = await Worker.create({
      connection: await NativeConnection.connect({ address: testSettings().address }),
      namespace,
      taskQueue,
      workflowBundle: { code: readFileSync(testSettings().bundle, 'utf8') },
      activities,
    });
    const running = worker.run();
    const connection = await Connection.connect({ address: testSettings().address });
    try {
      const client = new Client({ connection, namespace });
      await use(await client.workflow.start(installationWorkflow, { workflowId: `installation/${taskQueue}`, taskQueue, args: [state] }));
    } finally {
      await connection.close();
      worker.shutdown();
      await running;
    }
  }
  const stateOf = (fields: Omit<NewInstallation, 'signingSecret'>) => newInstallationState({ ...fields, signingSecret: 'whsec_0123456789abcdefghijklmnop' }, new Date().toISOString());

  it("fires installation_setup on a member's edit, and on the code's own edit only when it changes the status: a setup handler that edits cannot fire itself for ever", async function () {
    const fired: string[] = [];
    const configurations = { account: { properties: { name: { type: 'string' } }, required: ['name'] } } as unknown as NewInstallation['configurations'];
    const activities = {
      async saveInstallation(): Promise<void> {},
      async dispatchInstallationEvents(_installation: unknown, events: { type: string; status: string }[]): Promise<void> {
        fired.push(...events.map((event) => `${event.type}:${event.status}`));
      },
    };
    await withInstallation(stateOf({ id: 'ins_setup', integration: 'custom', configurations, eventTypes: ['installation_setup'], target: { org: 'org-1' } }), activities, async (handle) => {
      const edit = async (patch: Record<string, unknown>, byIntegration: boolean) => (await handle.executeUpdate(configureUpdate, { args: [patch, { byIntegration }] })).status;
      assert.equal(await edit({ oauth_credentials: { token: 't1' } }, true), 'pending');
      assert.equal(await edit({ name: 'docs' }, false), 'active');
      assert.equal(await edit({ oauth_credentials: { token: 't2' } }, true), 'active');
      assert.equal(await edit({ oauth_credentials: { token: 't3' } }, true), 'active');
      assert.equal(await edit({ name: null }, true), 'pending');
      assert.deepEqual(fired, ['installation_setup:active', 'installation_setup:pending']);
    });
  });

  it('answers a change that comes while its deletion is being recorded as not found (404), as once it is gone', async function () {
    let deleting!: () => void;
    const deletionRecorded = new Promise<void>((resolve) => (deleting = resolve));
    const saved: InstallationProjection[] = [];
    const activities = {
      // The read model's write of the deletion takes its time.
      async saveInstallation(installation: InstallationProjection): Promise<void> {
        saved.push(installation);
        if (installation.status === 'deleted') await deletionRecorded;
      },
      async dispatchInstallationEvents(): Promise<void> {},
    };
    await withInstallation(stateOf({ id: 'ins_deleting', integration: 'webhook', target: { org: 'org-1' } }), activities, async (handle) => {
      try {
        await waitFor(async () => (saved.length ? true : undefined), 10_000, 'the first write of the read model');
        const deleted = handle.executeUpdate(deleteUpdate);
        await waitFor(async () => (saved.some((installation) => installation.status === 'deleted') ? true : undefined), 10_000, 'the deletion under way');
        const refused = await handle.executeUpdate(pauseUpdate, { args: [undefined] }).then(
          () => assert.fail('a pause of an installation being deleted was taken'),
          (err: unknown) => err,
        );
        assert.ok(refused instanceof WorkflowUpdateFailedError && refused.cause instanceof ApplicationFailure, String(refused));
        assert.equal((refused.cause as ApplicationFailure).type, FailureType.notFound);
        deleting();
        assert.equal((await deleted).status, 'deleted');
      } finally {
        deleting(); // the worker's shutdown waits for the activity
      }
    });
  });
});
