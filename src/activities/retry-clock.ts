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

/** How a batch run's cancellation bears on its attempts. */
export interface BatchCancellation {
  /** Aborted when this worker stops (past its drain time): its attempts in flight end at once, recorded `interrupted`. */
  stopped: AbortSignal;
  /**
   * Aborted once this worker begins to stop (its drain; `stopped` at the latest): attempts
   * not yet sent go back to the shard for another worker, none starts in the drain.
   */
  stopping: AbortSignal;
  /**
   * Aborted when the run is cancelled for any other reason: the server timed it out (its
   * heartbeats were lost while the server was away, say) and a newer run of the batch has
   * its attempts, or it was paused, reset or cancelled. Attempts not yet written as started
   * are left to the next run, not sent by both; those in flight end by themselves and are
   * recorded, which that run reads; then the run fails cancelled, with no partial answer.
   */
  superseded: AbortSignal;
  /** Aborted with either: what waits for a retry's time stops waiting. */
  either: AbortSignal;
  /** The batch is over: it no longer listens to the activity's cancellation (an ordered line runs many batches in one activity). */
  release(): void;
}

/** `draining`: the worker's, aborted when its stop begins (see AttemptBatchDependencies.draining). */
export function batchCancellation(context: Context, draining?: AbortSignal): BatchCancellation {
  const [stopped, stopping, superseded] = [new AbortController(), new AbortController(), new AbortController()];
  const either = AbortSignal.any([stopping.signal, superseded.signal]);
  // Every attempt of the batch waits on them (its retry time, its answer): Node's warning past 10 listeners is no leak here.
  for (const signal of [stopped.signal, stopping.signal, superseded.signal, either]) setMaxListeners(0, signal);
  const { cancellationSignal } = context;
  const onCancel = () => {
    const shutdown = context.cancellationDetails?.workerShutdown || (cancellationSignal.reason as Error | undefined)?.message === 'WORKER_SHUTDOWN';
    if (shutdown) stopped.abort();
    (shutdown ? stopping : superseded).abort();
  };
  const onDrain = () => stopping.abort();
  if (cancellationSignal.aborted) onCancel();
  else cancellationSignal.addEventListener('abort', onCancel, { once: true });
  if (draining?.aborted) onDrain();
  else draining?.addEventListener('abort', onDrain, { once: true });
  return {
    stopped: stopped.signal,
    stopping: stopping.signal,
    superseded: superseded.signal,
    either,
    release: () => {
      cancellationSignal.removeEventListener('abort', onCancel);
      draining?.removeEventListener('abort', onDrain);
    },
  };
}

/** When an entry's attempt may go out here: its retry's time, with a margin if read on another worker's clock. */
export const timeOf = (entry: { notBefore?: number; clock?: string }): number => (entry.notBefore === undefined ? 0 : entry.notBefore + (entry.clock === CLOCK ? 0 : CLOCK_MARGIN_MS));
