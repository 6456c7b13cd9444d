import assert from 'node:assert/strict';
import { HOLD_AFTER_MS, ReceiverStates } from '../src/ingest/receiver-states';
import type { ReceiverStanding } from '../src/delivery-log/health-reads';

/**
 * When ingest holds an installation's new events, by how its receiver fails: one that fails
 * fast (refused, 5xx) after 3 s, one that hangs after the attempt timeout. The whole path
 * (attempts, the log, ingest, the release) is receiver-hold.test.ts's, with the fast kind.
 */
describe('receiver states: how long a receiver fails before its events are held', function () {
  const failingFrom = 1_000_000;
  const standings = new Map<string, ReceiverStanding>([
    ['ins_fast', { state: 'fast', failingFrom }],
    ['ins_slow', { state: 'slow', failingFrom }],
    ['ins_prompt', { state: 'prompt' }],
  ]);

  /** States after their first read has answered (asking never waits for it). */
  async function read(): Promise<ReceiverStates> {
    let answered!: () => void;
    const done = new Promise<void>((resolve) => (answered = resolve));
    const states = new ReceiverStates(async () => {
      setImmediate(answered);
      return standings;
    });
    assert.equal(states.holding('ins_fast'), false, 'nothing known before the first read answers');
    await done;
    return states;
  }

  it('holds a receiver failing fast from 3 s on, one that hangs from 10 s on, never one that answers', async function () {
    assert.deepEqual(HOLD_AFTER_MS, { fast: 3000, slow: 10_000 });
    const states = await read();
    const at = (ms: number) => failingFrom + ms;
    assert.deepEqual([states.holding('ins_fast', at(2999)), states.holding('ins_fast', at(3000))], [false, true]);
    assert.deepEqual([states.holding('ins_slow', at(9999)), states.holding('ins_slow', at(10_000))], [false, true]);
    assert.equal(states.holding('ins_prompt', at(60_000)), false);
    assert.equal(states.holding('ins_unknown', at(60_000)), false);
    assert.equal(states.stateOf('ins_slow'), 'slow');
  });
});
