import assert from 'node:assert/strict';
import { FirstAttemptLag, YieldingPace } from '../src/activities/yielding-pace';

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const OPTIONS = { baseMs: 10, maxMs: 80, idleMs: 60_000, delayMs: 50 };

/** A pace on real timers, with what each of its waits asked for. */
function paceOf(options = OPTIONS) {
  const firstAttempts = new FirstAttemptLag();
  const pace = new YieldingPace(options, firstAttempts);
  const asked: number[] = [];
  const wait = (during?: () => void) =>
    pace.wait(async (ms) => {
      asked.push(ms);
      during?.();
      await pause(ms);
    });
  return { asked, wait, firstAttempts };
}

describe('the pace of background hand-overs', function () {
  it('keeps its base gap while new events start on time, and when none is made', async function () {
    const { asked, wait, firstAttempts } = paceOf();
    for (let i = 0; i < 5; i++) await wait(() => firstAttempts.note(20));
    // Its timers late on a busy machine (the loop held 300 ms): no new event waited, no reason to give way.
    await wait(() => {
      setTimeout(() => {
        const until = performance.now() + 300;
        while (performance.now() < until);
      }, 1);
    });
    await wait();
    assert.deepEqual(asked, [10, 10, 10, 10, 10, 10, 10]);
  });

  it('takes first attempts that are all slow, as through a distant Temporal, for the floor, not for a delay', async function () {
    const { asked, wait, firstAttempts } = paceOf();
    for (let i = 0; i < 4; i++) await wait(() => firstAttempts.note(150 + i * 10));
    assert.deepEqual(asked, [10, 10, 10, 10]);
  });

  it('doubles its gap, up to its longest, while new events’ first attempts start later than their floor, and shrinks it back a base step at a time', async function () {
    const { asked, wait, firstAttempts } = paceOf();
    firstAttempts.note(10);
    for (let i = 0; i < 5; i++) await wait(() => firstAttempts.note(200));
    for (let i = 0; i < 4; i++) await wait();
    assert.deepEqual(asked, [10, 20, 40, 80, 80, 80, 70, 60, 50]);
  });

  it('judges a gap by the first attempts made in it, not by those of an earlier one', async function () {
    const { asked, wait, firstAttempts } = paceOf();
    firstAttempts.note(10);
    await wait(() => firstAttempts.note(200));
    await wait();
    await wait();
    assert.deepEqual(asked, [10, 20, 10]);
  });

  it('takes a gap with no first attempt in it for on time, whatever the floor (clocks apart put it below zero)', async function () {
    const { asked, wait, firstAttempts } = paceOf();
    firstAttempts.note(-200);
    await wait();
    await wait();
    assert.deepEqual(asked, [10, 10]);
  });

  it('starts from its base gap again after no wait for a while: what the last operation met is over', async function () {
    const { asked, wait, firstAttempts } = paceOf({ ...OPTIONS, idleMs: 100 });
    firstAttempts.note(10);
    for (let i = 0; i < 3; i++) await wait(() => firstAttempts.note(200));
    await pause(300);
    await wait();
    assert.deepEqual(asked, [10, 20, 40, 10]);
  });

  it('leaves out first attempts made long after their record (stranded ones, handed over again a minute later): they waited for no worker', function () {
    const lag = new FirstAttemptLag();
    const from = performance.now();
    assert.equal(lag.medianSince(from), undefined);
    lag.note(31_000);
    assert.equal(lag.medianSince(from), undefined);
    assert.equal(lag.floorMs, Infinity);
    for (let i = 1; i <= 10; i++) lag.note(i * 10);
    assert.equal(lag.medianSince(from), 50);
    assert.equal(lag.floorMs, 10);
    assert.equal(lag.medianSince(performance.now() + 1), undefined);
  });
});
