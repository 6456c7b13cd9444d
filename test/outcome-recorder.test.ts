import assert from 'node:assert/strict';
import { OutcomeRecorder } from '../src/activities/outcome-recorder';
import type { DeliveryOutcome } from '../src/delivery-log/types';

const outcome = (id: string): DeliveryOutcome => ({ id, status: 'delivered' });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The recorder alone, its write a function that keeps what it is given (the log's write is tested through the platform). */
describe('an attempt batch’s outcome recorder', function () {
  it('writes outcomes that come within its window together, one write at a time, and what is left on close', async function () {
    const writes: string[][] = [];
    let writing = 0;
    let firstStarted!: () => void;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    const recorder = new OutcomeRecorder(async (part) => {
      assert.equal(writing++, 0, 'one write at a time');
      firstStarted();
      await pause(30);
      writes.push(part.map((o) => o.id));
      writing--;
    }, 20);
    recorder.add(outcome('a'));
    recorder.add(outcome('b'));
    await started;
    // The first write is under way: these two wait for it, and go together.
    recorder.add(outcome('c'));
    recorder.add(outcome('d'));
    await recorder.close();
    assert.deepEqual(writes, [['a', 'b'], ['c', 'd']]);
  });

  it('rejects on close with a write that failed, having written the others', async function () {
    const writes: string[][] = [];
    let failed!: () => void;
    const failure = new Promise<void>((resolve) => (failed = resolve));
    const recorder = new OutcomeRecorder(async (part) => {
      if (part.some((o) => o.id === 'bad')) {
        failed();
        throw new Error('database away');
      }
      writes.push(part.map((o) => o.id));
    }, 5);
    recorder.add(outcome('bad'));
    await failure;
    recorder.add(outcome('after'));
    await assert.rejects(recorder.close(), /database away/);
    assert.deepEqual(writes, [['after']]);
  });

  it('writes nothing more once the batch has failed, and ends with the write under way', async function () {
    const writes: string[][] = [];
    let writeStarted!: () => void;
    const started = new Promise<void>((resolve) => (writeStarted = resolve));
    const recorder = new OutcomeRecorder(async (part) => {
      writeStarted();
      await pause(30);
      writes.push(part.map((o) => o.id));
    }, 5);
    recorder.add(outcome('written'));
    await started;
    // The write of the first is under way; this one is queued behind it.
    recorder.add(outcome('queued'));
    await recorder.abort();
    assert.deepEqual(writes, [['written']], 'abort waited for the write under way');
    recorder.add(outcome('late'));
    await pause(40);
    assert.deepEqual(writes, [['written']]);
  });
});
