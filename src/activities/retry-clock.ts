import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Context } from '@temporalio/activity';

/** When a retry is due and on whose clock, and when a worker stopping ends the attempts in flight. */

/**
 * What is left of a retry's wait once its batch returns: the wait runs from the end of the
 * attempt (timed in this run on a monotonic clock), not from the end of the batch (its
 * slowest receiver and the log's write). An attempt recorded by an earlier run of the batch
 * gets its whole wait again: another worker's clock cannot shorten it.
 */
function remainingWait(waitMs: number, endedAt: number | undefined, now = performance.now()): number {
  return endedAt === undefined ? waitMs : Math.max(0, waitMs - (now - endedAt));
}

/** This worker process's clock, named: a retry's time read on another one gets CLOCK_MARGIN_MS more. */
const CLOCK = randomBytes(4).toString('hex');
/**
 * What a retry chosen on another worker's clock waits beyond its time: workers whose
 * clocks agree within this (NTP keeps them within a few) never send a retry early.
 */
const CLOCK_MARGIN_MS = 50;

/** A retry's wait left now, and its time on this worker's clock. */
export function retryOf(waitMs: number, endedAt: number | undefined): { retryInMs: number; retryAt: number; clock: string } {
  const retryInMs = remainingWait(waitMs, endedAt);
  return { retryInMs, retryAt: Date.now() + retryInMs, clock: CLOCK };
}

/** Until a time (ms since 1970) on this worker's clock has passed, or the worker stops. */
export async function waitUntil(at: number, stopping: AbortSignal): Promise<void> {
  // setTimeout may end a little before Date.now() reaches the time: wait again until it has.
  while (Date.now() < at && !stopping.aborted) {
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stopping.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, at - Date.now());
      stopping.addEventListener('abort', done);
    });
  }
}

/**
 * Aborted when this worker stops (past its drain time): its attempts in flight end at once,
 * recorded `interrupted`. Any other cancellation (the batch's run ended, say) leaves them to
 * end by themselves and be recorded, which the next run reads.
 */
export function workerStopping(context: Context): AbortSignal {
  const stopping = new AbortController();
  // Every attempt of the batch waits on it (its retry time, its answer): Node's warning past 10 listeners is no leak here.
  setMaxListeners(0, stopping.signal);
  const { cancellationSignal } = context;
  const onCancel = () => {
    if (context.cancellationDetails?.workerShutdown || (cancellationSignal.reason as Error | undefined)?.message === 'WORKER_SHUTDOWN') stopping.abort();
  };
  if (cancellationSignal.aborted) onCancel();
  else cancellationSignal.addEventListener('abort', onCancel, { once: true });
  return stopping.signal;
}

/** When an entry's attempt may go out here: its retry's time, with a margin if read on another worker's clock. */
export const timeOf = (entry: { notBefore?: number; clock?: string }): number => (entry.notBefore === undefined ? 0 : entry.notBefore + (entry.clock === CLOCK ? 0 : CLOCK_MARGIN_MS));
