import * as wf from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { busy, invalid } from '../contracts/failures';
import { backlogQuery, enqueueUpdate, handOverSignal, MAX_BACKLOG, type ShardEntry, type ShardInput, type ShardItem } from './shard-contract';
import { PROMPT_LANE, SHARED_LANE_BATCHES, SHARED_LANE_BATCHES_BEFORE_CAP, isRetryLane } from './shard-lanes';
import { ShardState } from './shard-state';
import { isFailing } from '../webhooks/schedule';

const isShardItem = (item: ShardItem | undefined): boolean =>
  typeof item?.id === 'string' && typeof item.installationId === 'string' && (item.trace === undefined || typeof item.trace === 'string') && (item.failing === undefined || isFailing(item.failing)) && (item.prompt === undefined || item.prompt === true);

/** How long after its epoch a shard workflow stays open for hand-overs sent late (the API's deadline is 1.5 s). */
const EPOCH_GRACE_MS = 2000;
/** An epoch's workflow continues as new past this many history events (the server warns at 10,240). */
const MAX_EPOCH_HISTORY = 10_000;

/** How long a handover waits for the batches in flight before it carries them over. */
const HANDOVER_WAIT_MS = 1000;
/**
 * A retry's batch starts this long before the retry is due, and its attempts wait in the
 * activity for their exact time: the shard's timer, the workflow task, the activity's
 * dispatch and the log's read happen before the time rather than after it, so the waits
 * receivers see are the schedule's. Temporal fires timers on whole seconds (rounded up:
 * it promises no sub-second accuracy), so a shard with nothing else to wake it learns of
 * a retry up to a second and some 160 ms late (measured on the dev server); dispatch adds
 * about 120 ms at the median under full load, over 300 ms at the tail.
 */
const RETRY_LEAD_MS = 1500;
/** Retries due within this long of the earliest go in its batch (up to BATCH): with the lead, about four batches of a lane wait at a time. */
const RETRY_GROUP_MS = 500;
/** The lead and grouping of runs started before timers were known to fire on whole seconds. */
const SUB_SECOND_LEAD_MS = 300;
const SUB_SECOND_GROUP_MS = 100;

const ATTEMPT_BATCH: wf.ActivityOptions = {
  // A batch's attempts run concurrently, each bounded at 10 s; the rest is the log's write.
  startToCloseTimeout: '60 seconds',
  // A worker that dies mid-batch is noticed within seconds; the batch runs again elsewhere
  // and skips what it recorded before dying.
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 10 },
};
const activities = wf.proxyActivities<ReturnType<typeof createActivities>>(ATTEMPT_BATCH);

/**
 * Retry batches go to a task queue of their own: each waits in its worker slot for its
 * retries' time (RETRY_LEAD_MS), and installations whose receivers fail must not take the
 * slots that other installations' first attempts need. Every worker polls both.
 */
export const retryTaskQueue = (taskQueue: string): string => `${taskQueue}-retries`;
const { failDeliveries } = wf.proxyActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/**
 * A delivery shard's workflow (DESIGN.md §2), one per epoch: the API hands it deliveries
 * in batches (signals, one in flight per shard from each API process); it attempts them in
 * batches of one installation each, so a slow receiver holds back only its own deliveries
 * (those of receivers that fail everything share batches, see ShardState's `failing`);
 * it waits out retries on one durable timer for the earliest due; it completes once its
 * epoch is over and all it took is final, and continues as new with what it holds if its
 * history grows long first. Runs from before epochs (no epochEndsAt) are long-lived.
 */
export async function deliveryShardWorkflow(input: ShardInput): Promise<void> {
  const { workflowId, runId } = wf.workflowInfo();
  // Each change of behaviour is a patch: runs started before it replay as they ran (see docs/decisions/delivery-shards.md on retiring them).
  // Before lanes, the cap on batches in flight and the timed handover.
  const lanes = wf.patched('batch-lanes');
  // Before lanes took more than one batch in flight.
  const pipelined = wf.patched('lane-pipeline');
  // Before retries were led (see RETRY_LEAD_MS), or led by less than a timer's granularity.
  const led = wf.patched('retry-lead');
  const [lead, group] = led && wf.patched('retry-lead-whole-seconds') ? [RETRY_LEAD_MS, RETRY_GROUP_MS] : [SUB_SECOND_LEAD_MS, SUB_SECOND_GROUP_MS];
  // Before retry batches had a task queue of their own.
  const apart = lanes && wf.patched('retry-task-queue');
  // Before what is carried was bounded by its size.
  const bytesBounded = wf.patched('carry-bytes');
  const { attemptDeliveries: attemptRetries } = wf.proxyActivities<ReturnType<typeof createActivities>>({ ...ATTEMPT_BATCH, taskQueue: retryTaskQueue(wf.workflowInfo().taskQueue) });
  // Before lanes whose receivers hang were held to one partial batch; before they were carried over.
  const holdsHanging = wf.patched('hanging-lane-partial-batches');
  const hanging = new Set<string>(wf.patched('carry-hanging-lanes') ? input.hanging : []);
  // Before failing receivers shared two lanes.
  const sharesFailing = lanes && wf.patched('failing-shared-lanes');
  // Before hand-overs said which receivers were failing.
  const hinted = sharesFailing && wf.patched('failing-hints');
  // Before an interrupted attempt was left out of a receiver's failing.
  const interruptionsFree = sharesFailing && wf.patched('interrupted-not-failing');
  // Before shared lanes were held to fewer batches in flight.
  const sharedLaneBatches = sharesFailing && wf.patched('shared-lane-batches-4') ? SHARED_LANE_BATCHES : SHARED_LANE_BATCHES_BEFORE_CAP;
  // Before prompt receivers' first attempts shared a lane.
  const sharesPrompt = lanes && wf.patched('prompt-first-attempts');
  // Before hand-overs said which receivers were prompt.
  const promptHinted = sharesPrompt && hinted && wf.patched('prompt-hints');
  // Before what was queued followed its installation to its new lane.
  const queuedFollow = sharesFailing && wf.patched('queued-follow-lane');
  // Before a receiver that had answered within 2 s kept its lanes through a batch failing fast throughout.
  const failingAfterAnswer = sharesFailing && wf.patched('failing-after-answer');
  const state = new ShardState(input, { lanes, pipelined, led, lead, group, bytesBounded, holdsHanging, sharesFailing, hinted, interruptionsFree, sharedLaneBatches, sharesPrompt, promptHinted, queuedFollow, failingAfterAnswer }, hanging, new Map(sharesFailing ? input.failing : []));

  wf.setHandler(handOverSignal, (items) => {
    // A signal cannot be refused: what is malformed (never sent by the platform) is left out, said in the log.
    const wellFormed = Array.isArray(items) ? items.filter(isShardItem) : [];
    if (wellFormed.length !== (Array.isArray(items) ? items.length : 1)) wf.log.warn('hand-over: malformed items left out', { shard: input.shard });
    state.accept(wellFormed);
  });
  wf.setHandler(enqueueUpdate, (items) => state.accept(items), {
    validator: (items) => {
      if (!Array.isArray(items) || !items.every(isShardItem)) throw invalid('enqueue takes [{id, installationId, trace?}]');
      if (state.known.size + items.length > MAX_BACKLOG) throw busy(`delivery shard ${input.shard} holds ${state.known.size} deliveries; try again shortly`);
    },
  });
  wf.setHandler(backlogQuery, () => state.known.size);

  async function attempt(lane: string, entries: ShardEntry[]): Promise<void> {
    const batch = state.started(lane, entries);
    try {
      const attemptBatch = apart && isRetryLane(lane) ? attemptRetries : activities.attemptDeliveries;
      const results = await attemptBatch({ workflowId, runId, entries: entries.map(({ id, attempt, trace, notBefore, clock }) => ({ id, attempt, ...(trace && { trace }), ...(notBefore !== undefined && { notBefore, clock }) })), ...(lane === PROMPT_LANE && { prompt: true as const }) });
      state.settle(lane, entries, results);
    } catch (err) {
      // The platform could not attempt them (its retries spent): a final, replayable state.
      const message = err instanceof wf.ActivityFailure && err.cause ? err.cause.message : String(err);
      await failDeliveries(entries.map((entry) => entry.id), `platform_error: ${message}`);
      state.settle(lane, entries, []);
    } finally {
      state.ended(lane, batch);
    }
  }

  const closesAt = input.epochEndsAt === undefined ? Infinity : input.epochEndsAt + EPOCH_GRACE_MS;
  // An epoch's run continues as new only when its history is long (the server suggests it
  // at 4,096 events, 5 s at 100 events/s): what it holds goes over, and a hand-over
  // arriving as it does makes the server refuse it and the worker replay the run.
  const historyLong = () => (input.epochEndsAt === undefined ? wf.workflowInfo().continueAsNewSuggested : wf.workflowInfo().historyLength >= MAX_EPOCH_HISTORY);
  const handOver = () => (state.handOversSpent() || historyLong()) && state.carriable();
  /**
   * When the handover began. It waits for the batches in flight (their results settle
   * retries) for a second (up to two: timers fire on whole seconds): a receiver that hangs
   * must not stop the whole shard.
   */
  let drainingSince: number | undefined;
  // Before the steady alarm: each workflow task started a timer and the next cancelled it.
  const steady = wf.patched('steady-alarm');
  /**
   * The one wake-up timer pending. It is kept while no earlier wake-up is wanted (a later
   * one is set once it rings): at a steady trickle of hand-overs, a workflow task used to
   * start a timer and the next to cancel it, four history events and two commands an event.
   */
  let alarm: { at: number; rings: Promise<void>; scope: wf.CancellationScope } | undefined;
  const wakeBy = (at: number): Promise<void> => {
    if (!alarm || at < alarm.at) {
      alarm?.scope.cancel();
      const scope = new wf.CancellationScope();
      const rings = scope.run(() => wf.sleep(Math.max(1, at - Date.now()))).then(
        () => {
          if (alarm?.scope === scope) alarm = undefined;
        },
        () => undefined, // cancelled: an earlier one replaced it
      );
      alarm = { at, rings, scope };
    }
    return alarm.rings;
  };
  const changed = () => state.changed;
  for (;;) {
    state.changed = false;
    const now = Date.now();
    if (now >= closesAt && state.known.size === 0) break;
    state.releaseDue(now);
    if (!handOver()) {
      for (const [lane, batch] of state.batchesToStart()) void attempt(lane, batch);
    } else {
      drainingSince ??= now;
      if (state.flying.size === 0 || (lanes && now - drainingSince >= HANDOVER_WAIT_MS)) break;
    }
    const deadlines = state.readyTimes();
    if (drainingSince !== undefined && lanes) deadlines.push(drainingSince + HANDOVER_WAIT_MS);
    if (now < closesAt) deadlines.push(closesAt);
    const next = Math.min(...deadlines);
    if (!Number.isFinite(next)) await wf.condition(changed);
    else if (steady) await Promise.race([wf.condition(changed), wakeBy(next)]);
    else await wf.condition(changed, Math.max(1, next - Date.now()));
  }
  // No update may be left half handled; what is queued, waiting or still in flight goes to
  // the next run (what is in flight after the time it needs to end).
  await wf.condition(wf.allHandlersFinished);
  // The epoch is over and all it took is final.
  if (state.known.size === 0 && Date.now() >= closesAt) return;
  const { entries, hanging: stillHanging, failing } = state.carried();
  await wf.continueAsNew<typeof deliveryShardWorkflow>({
    shard: input.shard,
    entries,
    ...(input.epochEndsAt !== undefined && { epochEndsAt: input.epochEndsAt }),
    ...(input.handOversPerRun && { handOversPerRun: input.handOversPerRun }),
    ...(stillHanging && { hanging: stillHanging }),
    ...(failing && { failing }),
  });
}

/**
 * A shard's workflow of one epoch (see ShardInput.epochEndsAt): the same code under a type
 * of its own, so that a worker from before epochs, which has no handler for the hand-over
 * signal, fails its tasks (retried until a current worker takes them) instead of running it.
 */
export async function deliveryEpochWorkflow(input: ShardInput): Promise<void> {
  return deliveryShardWorkflow(input);
}
