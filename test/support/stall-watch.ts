import { readFileSync } from 'node:fs';

/**
 * Says on stderr when this test process's event loop was held for more than STALL_MS, and
 * how much of that time the machine's tasks were all stalled on I/O (Linux's pressure
 * stall information), so that a test that timed out on a busy CI run can be told from one
 * whose process, or whose machine, stood still.
 */
const STALL_MS = 2000;
const TICK_MS = 250;

const ioFullMicros = (): number | undefined => {
  try {
    const total = /^full .* total=(\d+)$/m.exec(readFileSync('/proc/pressure/io', 'utf8'))?.[1];
    return total === undefined ? undefined : Number(total);
  } catch {
    return undefined;
  }
};

let last = performance.now();
let lastIo = ioFullMicros();
setInterval(() => {
  const now = performance.now();
  const io = ioFullMicros();
  const heldMs = now - last - TICK_MS;
  if (heldMs > STALL_MS) {
    const ioStalled = io !== undefined && lastIo !== undefined ? ` (the machine all stalled on I/O for ${Math.round((io - lastIo) / 1000)} ms of it)` : '';
    const running = (globalThis as { runningTest?: string }).runningTest;
    process.stderr.write(`stall: process ${process.pid}'s event loop was held ${Math.round(heldMs)} ms until ${new Date().toISOString()}${ioStalled}${running ? `, in ${running}` : ''}\n`);
  }
  [last, lastIo] = [now, io];
}, TICK_MS).unref();
