import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { EngineWait } from '../src/api/engine-wait';
import { trackCall } from '../src/temporal/calls-in-flight';

/**
 * The API's wait on Temporal, against a stand-in client whose frontend never answers its
 * probe: the real server's cases (hung, stopped, busy) are lifecycle.test.ts's.
 */
describe('the API’s wait on Temporal', function () {
  const silentEngine = { withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(), workflowService: { getSystemInfo: () => new Promise((_, reject) => setTimeout(() => reject(new Error('deadline exceeded')), 2000)) } } as unknown as Client;
  /** A request whose Temporal call (counted as the platform's client counts its calls) is answered after `ms`. */
  const answeredAfter = (ms: number) => () => {
    const end = trackCall();
    return new Promise((resolve) => setTimeout(() => (end(), resolve('answered')), ms));
  };
  /** Holds this process's event loop for `ms`, as a starved CPU does. */
  const hold = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };

  it('answers 503 once the frontend stays silent through a probe', async function () {
    // The call never answers: whatever probe this process's own stalls excuse, a later one is not.
    const never = () => {
      trackCall();
      return new Promise(() => undefined);
    };
    await assert.rejects(new EngineWait(silentEngine).run(never), /Temporal did not answer in time/);
  });

  it('does not take this process standing still for the engine’s silence: the request waits for its answer', async function () {
    const waiting = new EngineWait(silentEngine).run(answeredAfter(4000));
    // The probe goes out once the call has waited 500 ms; the process then stands still for most of it.
    setTimeout(() => hold(1200), 800);
    assert.equal(await waiting, 'answered');
  });
});
