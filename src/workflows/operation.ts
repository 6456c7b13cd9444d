import * as wf from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { cancelOperationSignal } from '../contracts/operation';
import { operationPhases, type OperationRequest, type PageCursor } from '../delivery-log/types';

// A page takes a second or so, up to some 12 s while its hand-over gives way to new events (see operationPage): a worker that died with one is found out within 30 s.
const { beginOperation, operationPage, finishOperation } = wf.proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/**
 * The pause between two pages: 500 deliveries a page (handed to the shards 25 at a time,
 * at least 25 ms apart, see operationPage), at most 500 a second, so that a large backlog
 * shares them with other installations' new events instead of filling their queues ahead
 * of them.
 */
const PAGE_PAUSE = '500 milliseconds';
/** Pages a run takes before it continues as new (some 8 history events each). */
const PAGES_PER_RUN = 100;
/**
 * A release looks once more this long after it found nothing held: an ingest flush that
 * read the installation still paused just before the resume records its events held after
 * it (within its request's 1.8 s deadline, or its request answered 503 and is retried).
 */
const LATE_HELD_LOOK = '5 seconds';

interface Progress {
  began: number;
  /** The phase under way (see operationPhases), and where its next page starts. */
  phase: number;
  after?: PageCursor;
  lookedLate?: boolean;
}

/**
 * A background operation over one installation's deliveries (see contracts/operation.ts),
 * a page at a time, paced, cancellable between pages; its progress is in the delivery log.
 */
export async function operationWorkflow(request: OperationRequest, progress?: Progress): Promise<void> {
  let cancelled = false;
  wf.setHandler(cancelOperationSignal, () => void (cancelled = true));
  const phases = operationPhases(request);
  const state: Progress = progress ?? { began: await beginOperation(request), phase: 0 };
  for (let page = 0; page < PAGES_PER_RUN; page++) {
    if (cancelled) return finishOperation(request.id, 'cancelled');
    const phase = phases[state.phase]!;
    const done = await operationPage(request, state.began, phase, state.after);
    if (done.next === undefined) {
      if (phase === 'release' && !state.lookedLate) {
        state.lookedLate = true;
        await wf.condition(() => cancelled, LATE_HELD_LOOK);
        continue;
      }
      if (state.phase === phases.length - 1) return finishOperation(request.id, 'done');
      state.phase += 1;
      state.after = undefined;
      continue;
    }
    if (done.next !== 'more') state.after = done.next;
    await wf.condition(() => cancelled, PAGE_PAUSE);
  }
  if (cancelled) return finishOperation(request.id, 'cancelled');
  return wf.continueAsNew<typeof operationWorkflow>(request, state);
}
