import assert from 'node:assert/strict';
import { FairQueue } from '../src/isolates/fair-queue';

describe('the isolate pool’s start queue', function () {
  it('runs one task at a time, owners in turn, each owner’s in order, and passes on results and failures', async function () {
    const queue = new FairQueue();
    const order: string[] = [];
    let running = 0;
    let most = 0;
    const task = (name: string, fails = false) => async () => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setImmediate(resolve));
      order.push(name);
      running -= 1;
      if (fails) throw new Error(`${name} failed`);
      return name;
    };
    const results = await Promise.allSettled([
      ...['a1', 'a2', 'a3', 'a4'].map((name) => queue.run('a', task(name))),
      queue.run('b', task('b1', true)),
      queue.run('b', task('b2')),
      queue.run('c', task('c1')),
    ]);
    // a1 was already running when the others came: then each owner in turn.
    assert.deepEqual(order, ['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4']);
    assert.equal(most, 1);
    assert.deepEqual(results.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as Error).message)), ['a1', 'a2', 'a3', 'a4', 'b1 failed', 'b2', 'c1']);
  });
});
