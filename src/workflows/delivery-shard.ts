import * as wf from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { AttemptBatchResult } from '../activities/attempt-batch';
import { busy, invalid } from '../contracts/failures';
import { backlogQuery, enqueueUpdate, handOverSignal, MAX_BACKLOG, type ShardEntry, type ShardInput, type ShardItem } from './shard-contract';

const isShardItem = (item: ShardItem | undefined): boolean => typeof item?.id === 'string' && typeof item.installationId === 'string' && (item.trace === undefined || typeof item.trace === 'string');

/** How long after its epoch a shard workflow stays open for hand-overs sent late (the API's deadline is 1.5 s). */
const EPOCH_GRACE_MS = 2000;
/** An epoch's workflow continues as new past this many history events (the server warns at 10,240). */
const MAX_EPOCH_HISTORY = 10_000;

/**
 * What a run carries to the next stays under the server's 2 MB payload limit: past it the
 * continue-as-new is refused and the run terminated, and the retries it held (attempted
 * once, so no stranded sweep finds them) stay pending for good. Entries are 150-520 bytes
 * (an eventId of up to 200 characters, a trace, a retry's time): at most ALWAYS_CARRIABLE
 * always fit; past that what would be carried is measured.
 */
const MAX_CARRIED_BYTES = 1_500_000;
const ALWAYS_CARRIABLE = 2_500;
/** Deliveries per attempt batch (one activity). */
const BATCH = 100;
/** Hand-overs per run: a bounded history (and, for updates, under the server's 2,000 per run). */
const HAND_OVERS_PER_RUN = 1500;
/**
 * Batches in flight per first-attempt lane. A lane with one in flight starts another only
 * when it has a full batch: one busy installation is not held to one batch per round
 * trip, and a receiver that hangs holds a few slots, not the shard.
 */
const LANE_BATCHES = 4;
/** How long a handover waits for the batches in flight before it carries them over. */
const HANDOVER_WAIT_MS = 1000;
/**
 * A carried batch's deliveries wait this long from the batch's start: a retry's wait for
 * its time (the lead and the grouping, 2 s at most), its attempts (10 s each at most) and
 * their record are over by then, so the next run finds them recorded and sends nothing twice.
 */
const CARRIED_BATCH_DELAY_MS = 17_000;
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
/**
 * Batches in flight per retry lane, partial ones included: with the lead, several overlap
 * while they wait for their time (a receiver that hangs: one partial one, once a batch of it timed out throughout).
 */
const RETRY_LANE_BATCHES = 8;
/** Batches in flight at once in one run: the server fails a workflow task past 2,000 pending activities. */
export const MAX_BATCHES_IN_FLIGHT = 500;

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
 * batches of one installation each, so a slow receiver holds back only its own deliveries;
 * it waits out retries on one durable timer for the earliest due; it completes once its
 * epoch is over and all it took is final, and continues as new with what it holds if its
 * history grows long first. Runs from before epochs (no epochEndsAt) are long-lived.
 */
export async function deliveryShardWorkflow(input: ShardInput): Promise<void> {
  const { workflowId, runId } = wf.workflowInfo();
  /** Every id queued, waiting or in flight: a delivery handed over twice is attempted once. */
  const known = new Set<string>();
  // Runs started before lanes, the cap on batches in flight and the timed handover replay as they ran.
  const lanes = wf.patched('batch-lanes');
  /**
   * An installation's first attempts and its retries are batched apart, in lanes of their
   * own: a retry goes out when due, not after the first attempts in flight, and a slow
   * receiver holds its lanes' slots (LANE_BATCHES and RETRY_LANE_BATCHES) at most.
   */
  const laneOf = (entry: ShardEntry) => (lanes && entry.attempt > 1 ? `${entry.installationId}/retry` : entry.installationId);
  /** Due now, per lane, in arrival order. */
  const ready = new Map<string, ShardEntry[]>();
  /** Retries waiting for their time. */
  let waiting: ShardEntry[] = [];
  // Runs started before lanes took more than one batch in flight replay as they ran.
  const pipelined = wf.patched('lane-pipeline');
  // Runs started before retries were led (see RETRY_LEAD_MS), or led by less than a timer's
  // granularity, replay as they ran.
  const led = wf.patched('retry-lead');
  const [lead, group] = led && wf.patched('retry-lead-whole-seconds') ? [RETRY_LEAD_MS, RETRY_GROUP_MS] : [SUB_SECOND_LEAD_MS, SUB_SECOND_GROUP_MS];
  // Runs started before retry batches had a task queue of their own replay as they ran.
  const apart = lanes && wf.patched('retry-task-queue');
  // Runs that carried by count alone replay as they ran.
  const bytesBounded = wf.patched('carry-bytes');
  const { attemptDeliveries: attemptRetries } = wf.proxyActivities<ReturnType<typeof createActivities>>({ ...ATTEMPT_BATCH, taskQueue: retryTaskQueue(wf.workflowInfo().taskQueue) });
  /** When a waiting entry goes to its lane. */
  const readyAt = (entry: ShardEntry) => (led && entry.notBefore !== undefined ? entry.dueAt - lead : entry.dueAt);
  const isRetryLane = (lane: string) => lane.endsWith('/retry');
  /** Batches in flight per lane. */
  const laneFlights = new Map<string, number>();
  // Runs started before lanes whose receivers hang were held to one partial batch replay as they ran.
  const holdsHanging = wf.patched('hanging-lane-partial-batches');
  /**
   * Retry lanes whose last batch had every attempt time out: their receiver hangs, and each batch
   * holds a worker slot, and a place among the run's batches in flight, for the whole
   * attempt timeout. Such a retry lane starts a partial batch only when none is in flight,
   * as a first-attempt lane always does (what falls due meanwhile goes in the next); full
   * ones still go side by side, so a busy installation keeps its pace. Receivers that hang
   * at a trickle of events, each retry its own small batch, cannot take the places other
   * installations' attempts need. One answer from the receiver, whatever its status, lifts it.
   * A run continued as new is handed them; runs started before that carry replay as they ran.
   */
  const hanging = new Set<string>(wf.patched('carry-hanging-lanes') ? input.hanging : []);
  const noteHanging = (lane: string, results: AttemptBatchResult[]) => {
    // A first-attempt lane starts partial batches one at a time anyway.
    if (!holdsHanging || !isRetryLane(lane)) return;
    const attempted = results.filter((result) => result.statusCode !== undefined || result.error !== undefined);
    if (attempted.length === 0) return;
    if (attempted.every((result) => result.error === 'timeout')) hanging.add(lane);
    else hanging.delete(lane);
  };
  let handOvers = 0;
  let changed = false;

  const makeReady = (entry: ShardEntry) => {
    const list = ready.get(laneOf(entry));
    if (list) list.push(entry);
    else ready.set(laneOf(entry), [entry]);
  };
  const add = (entry: ShardEntry) => {
    known.add(entry.id);
    if (readyAt(entry) > Date.now()) waiting.push(entry);
    else makeReady(entry);
    changed = true;
  };
  for (const entry of input.entries ?? []) add(entry);

  /** Takes what is new of a hand-over (a delivery handed over twice is attempted once); answers how many. */
  const accept = (items: ShardItem[]): number => {
    handOvers += 1;
    let added = 0;
    for (const item of items) {
      if (known.has(item.id)) continue;
      add({ id: item.id, installationId: item.installationId, ...(item.trace && { trace: item.trace }), attempt: 1, dueAt: 0 });
      added += 1;
    }
    return added;
  };
  wf.setHandler(handOverSignal, (items) => {
    // A signal cannot be refused: what is malformed (never sent by the platform) is left out, said in the log.
    const wellFormed = Array.isArray(items) ? items.filter(isShardItem) : [];
    if (wellFormed.length !== (Array.isArray(items) ? items.length : 1)) wf.log.warn('hand-over: malformed items left out', { shard: input.shard });
    accept(wellFormed);
  });
  wf.setHandler(enqueueUpdate, accept, {
    validator: (items) => {
      if (!Array.isArray(items) || !items.every(isShardItem)) throw invalid('enqueue takes [{id, installationId, trace?}]');
      if (known.size + items.length > MAX_BACKLOG) throw busy(`delivery shard ${input.shard} holds ${known.size} deliveries; try again shortly`);
    },
  });
  wf.setHandler(backlogQuery, () => known.size);

  function settle(entries: ShardEntry[], results: AttemptBatchResult[]): void {
    const byId = new Map(results.map((result) => [result.id, result]));
    for (const entry of entries) {
      const result = byId.get(entry.id);
      known.delete(entry.id);
      if (result?.retryInMs === undefined) continue;
      // Led, a retry is due at the time the attempt's worker chose (retryAt), which the
      // batch waits for: the trip of this result to the workflow does not lengthen the wait.
      const notBefore = led ? result.retryAt : undefined;
      // Not attempted (`again`: no room for integration code) is the same attempt, later.
      add({ ...entry, attempt: result.again ? entry.attempt : entry.attempt + 1, dueAt: notBefore ?? Date.now() + result.retryInMs, ...(notBefore !== undefined && { notBefore, clock: result.clock }) });
    }
  }

  /** Batches in flight, with their start (workflow time). */
  const flying = new Map<number, { entries: ShardEntry[]; startedAt: number }>();
  let batches = 0;
  async function attempt(lane: string, entries: ShardEntry[]): Promise<void> {
    laneFlights.set(lane, (laneFlights.get(lane) ?? 0) + 1);
    const batch = ++batches;
    flying.set(batch, { entries, startedAt: Date.now() });
    try {
      const attemptBatch = apart && isRetryLane(lane) ? attemptRetries : activities.attemptDeliveries;
      const results = await attemptBatch({ workflowId, runId, entries: entries.map(({ id, attempt, trace, notBefore, clock }) => ({ id, attempt, ...(trace && { trace }), ...(notBefore !== undefined && { notBefore, clock }) })) });
      noteHanging(lane, results);
      settle(entries, results);
    } catch (err) {
      // The platform could not attempt them (its retries spent): a final, replayable state.
      const message = err instanceof wf.ActivityFailure && err.cause ? err.cause.message : String(err);
      await failDeliveries(entries.map((entry) => entry.id), `platform_error: ${message}`);
      settle(entries, []);
    } finally {
      const left = laneFlights.get(lane)! - 1;
      if (left) laneFlights.set(lane, left);
      else laneFlights.delete(lane);
      flying.delete(batch);
      changed = true;
    }
  }

  const closesAt = input.epochEndsAt === undefined ? Infinity : input.epochEndsAt + EPOCH_GRACE_MS;
  // An epoch's run continues as new only when its history is long (the server suggests it
  // at 4,096 events, 5 s at 100 events/s): what it holds goes over, and a hand-over
  // arriving as it does makes the server refuse it and the worker replay the run.
  const historyLong = () => (input.epochEndsAt === undefined ? wf.workflowInfo().continueAsNewSuggested : wf.workflowInfo().historyLength >= MAX_EPOCH_HISTORY);
  // An epoch's run holding more than the bound (several API processes' hand-overs while no
  // worker answered) hands over only once it holds less: what it carries must fit 2 MB.
  // Until it fits, the run goes on with what it holds, which its retries' ends shrink.
  const carriedBytes = () => JSON.stringify([...ready.values(), waiting, ...[...flying.values()].map(({ entries }) => entries)]).length;
  const carriable = () => input.epochEndsAt === undefined || (known.size <= MAX_BACKLOG && (!bytesBounded || known.size <= ALWAYS_CARRIABLE || carriedBytes() <= MAX_CARRIED_BYTES));
  const handOver = () => (handOvers >= (input.handOversPerRun ?? HAND_OVERS_PER_RUN) || historyLong()) && carriable();
  /**
   * When the handover began. It waits for the batches in flight (their results settle
   * retries) for a second (up to two: timers fire on whole seconds): a receiver that hangs
   * must not stop the whole shard.
   */
  let drainingSince: number | undefined;
  // Runs started before the steady alarm replay as they ran: each workflow task started a timer and the next cancelled it.
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
  for (;;) {
    changed = false;
    const now = Date.now();
    if (now >= closesAt && known.size === 0) break;
    // Led, retries due soon after the earliest go with it: one batch, not one per timer.
    const horizon = led && waiting.some((entry) => entry.notBefore !== undefined && readyAt(entry) <= now) ? now + group : now;
    const due = waiting.filter((entry) => readyAt(entry) <= horizon);
    if (due.length) {
      waiting = waiting.filter((entry) => readyAt(entry) > horizon);
      due.forEach(makeReady);
    }
    const draining = handOver();
    if (!draining) {
      for (const [lane, entries] of ready) {
        if (lanes && flying.size >= MAX_BATCHES_IN_FLIGHT) break;
        const inFlight = laneFlights.get(lane) ?? 0;
        // Another batch beside those in flight: a full one (up to LANE_BATCHES), or led retries
        // when due, beside batches of the lane still waiting for their time.
        const mayAddBatch = led && isRetryLane(lane) ? inFlight < RETRY_LANE_BATCHES : entries.length >= BATCH && inFlight < LANE_BATCHES;
        if (inFlight && (!pipelined || !mayAddBatch || (hanging.has(lane) && entries.length < BATCH))) continue;
        const batch = entries.splice(0, BATCH);
        if (entries.length === 0 || lanes) ready.delete(lane);
        // What is left goes to the back (visited again below): under the cap, lanes take turns.
        if (entries.length && lanes) ready.set(lane, entries);
        void attempt(lane, batch);
      }
    } else {
      drainingSince ??= now;
      if (flying.size === 0 || (lanes && now - drainingSince >= HANDOVER_WAIT_MS)) break;
    }
    const deadlines = waiting.map(readyAt);
    if (drainingSince !== undefined && lanes) deadlines.push(drainingSince + HANDOVER_WAIT_MS);
    if (now < closesAt) deadlines.push(closesAt);
    const next = Math.min(...deadlines);
    if (!Number.isFinite(next)) await wf.condition(() => changed);
    else if (steady) await Promise.race([wf.condition(() => changed), wakeBy(next)]);
    else await wf.condition(() => changed, Math.max(1, next - Date.now()));
  }
  // No update may be left half handled; what is queued, waiting or still in flight goes to
  // the next run (what is in flight after the time it needs to end).
  await wf.condition(wf.allHandlersFinished);
  // The epoch is over and all it took is final.
  if (known.size === 0 && Date.now() >= closesAt) return;
  // Carried, a retry's time is long past: it waits for its batch's delay, with no lead.
  const carried = [...flying.values()].flatMap(({ entries, startedAt }) => entries.map(({ notBefore: _time, clock: _clock, ...entry }) => ({ ...entry, dueAt: Math.max(entry.dueAt, startedAt + CARRIED_BATCH_DELAY_MS) })));
  const entries = [...[...ready.values()].flat(), ...waiting, ...carried];
  await wf.continueAsNew<typeof deliveryShardWorkflow>({
    shard: input.shard,
    entries,
    ...(input.epochEndsAt !== undefined && { epochEndsAt: input.epochEndsAt }),
    ...(input.handOversPerRun && { handOversPerRun: input.handOversPerRun }),
    // A hanging receiver's retries carried over must not take a batch each in the next run.
    ...(hanging.size && { hanging: [...new Set(entries.map(laneOf))].filter((lane) => hanging.has(lane)) }),
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
