import assert from 'node:assert/strict';
import { DeadlineError, GroupCommit } from '../src/group-commit';

describe('group commit', function () {
  it('batches what arrives while a flush is in flight, and answers each submitter with its own result', async function () {
    const flushed: number[][] = [];
    const commit = new GroupCommit<number, number>(async (items) => {
      flushed.push(items);
      await new Promise((resolve) => setTimeout(resolve, 20));
      return items.map((item) => item * 10);
    }, 100);
    const first = commit.submit(1);
    await new Promise((resolve) => setImmediate(resolve));
    const rest = [2, 3, 4].map((item) => commit.submit(item));
    assert.deepEqual(await Promise.all([first, ...rest]), [10, 20, 30, 40]);
    assert.deepEqual(flushed, [[1], [2, 3, 4]]);
  });

  it('answers a submitter at its deadline when a flush hangs, and leaves out of later flushes what was still queued then', async function () {
    let release!: () => void;
    const flushed: string[][] = [];
    const commit = new GroupCommit<string, string>(async (items) => {
      flushed.push(items);
      if (items.includes('hung')) await new Promise<void>((resolve) => (release = resolve));
      return items;
    }, 100);
    const started = Date.now();
    const hung = commit.submit('hung', started + 50);
    await new Promise((resolve) => setImmediate(resolve));
    const queued = commit.submit('queued', started + 50);
    const patient = commit.submit('patient', started + 10_000);
    await assert.rejects(hung, DeadlineError);
    await assert.rejects(queued, DeadlineError);
    assert.ok(Date.now() - started < 1000);
    release();
    assert.equal(await patient, 'patient');
    assert.deepEqual(flushed, [['hung'], ['patient']]);
  });
});
