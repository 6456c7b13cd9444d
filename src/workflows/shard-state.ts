import type { AttemptBatchResult } from '../activities/attempt-batch';
import { MAX_BACKLOG, type FailingKind, type ShardEntry, type ShardInput, type ShardItem } from './shard-contract';
import { FAILING_AFTER_ANSWER_MS, isFailing, receiverStatesOf } from '../webhooks/schedule';
import { BATCH, isRetryLane, isSharedLane, mayAddBatch, PROMPT_LANE, sharedLane, type ShardRules } from './shard-lanes';

/**
 * What a run carries to the next stays under the server's 2 MB payload limit: past it the
 * continue-as-new is refused and the run terminated, and the retries it held (attempted
 * once, so no stranded sweep finds them) stay pending for good. Entries are 150-520 bytes
 * (an eventId of up to 200 characters, a trace, a retry's time): at most ALWAYS_CARRIABLE
 * always fit; past that what would be carried is measured.
 */
const MAX_CARRIED_BYTES = 1_500_000;
const ALWAYS_CARRIABLE = 2_500;
/** Hand-overs per run: a bounded history (and, for updates, under the server's 2,000 per run). */
const HAND_OVERS_PER_RUN = 1500;
/** Batches in flight at once in one run: the server fails a workflow task past 2,000 pending activities. */
const MAX_BATCHES_IN_FLIGHT = 500;
/**
 * A carried batch's deliveries wait this long from the batch's start: a retry's wait for
 * its time (the lead and the grouping, 2 s at most), its attempts (10 s each at most) and
 * their record are over by then, so the next run finds them recorded and sends nothing twice.
 */
const CARRIED_BATCH_DELAY_MS = 17_000;

/**
 * What a delivery shard's run holds and the rules it keeps: deliveries queued per lane,
 * retries waiting for their time, batches in flight, lanes whose receivers hang. The
 * workflow wires the handlers, the timer and the activities to it.
 */
export class ShardState {
  /** Every id queued, waiting or in flight: a delivery handed over twice is attempted once. */
  readonly known = new Set<string>();
  /** Due now, per lane, in arrival order. */
  private readonly ready = new Map<string, ShardEntry[]>();
  /** Retries waiting for their time. */
  private waiting: ShardEntry[] = [];
  /** Installations whose attempts this run has seen answered or failed: its own view, not a hand-over's hint, decides their lanes. */
  private readonly seen = new Set<string>();
  /** When this run last saw each installation's receiver answer (a batch's results not all failures), or was told it answered promptly. */
  private readonly answeredAt = new Map<string, number>();
  /**
   * Installations whose receivers answered every attempt of their last batch promptly
   * (PROMPT_MS). Their first attempts share one lane across installations: 200
   * installations at an event a second each were 200 activities a second, a batch of one
   * delivery each, and took the machine (bench (g)'s control: another tenant's events
   * p99 9.8 s; sharing, 1.6 s). Only a receiver seen to answer promptly joins, by this
   * run or, said by a hand-over's `prompt`, by a run before: one that hangs or lags from
   * the start never holds a shared batch; one that turns slow holds the batches it is in
   * once (its attempt timeout at most), then has its own lanes back. Retries keep their
   * installation's lanes.
   */
  private readonly prompt = new Set<string>();
  /** Batches in flight per lane. */
  private readonly laneFlights = new Map<string, number>();
  /** Batches in flight, with their start (workflow time). */
  readonly flying = new Map<number, { entries: ShardEntry[]; startedAt: number }>();
  private batches = 0;
  private handOvers = 0;
  /** Something happened that the loop has not looked at yet. */
  changed = false;

  constructor(
    private readonly input: ShardInput,
    readonly rules: ShardRules,
    /**
     * Retry lanes whose last batch had every attempt time out: their receiver hangs, and each batch
     * holds a worker slot, and a place among the run's batches in flight, for the whole
     * attempt timeout. Such a retry lane starts a partial batch only when none is in flight,
     * as a first-attempt lane always does (what falls due meanwhile goes in the next); full
     * ones still go side by side, so a busy installation keeps its pace. Receivers that hang
     * at a trickle of events, each retry its own small batch, cannot take the places other
     * installations' attempts need. One answer from the receiver, whatever its status, lifts it.
     * A run continued as new is handed them.
     */
    private readonly hanging: Set<string>,
    /**
     * Installations whose last batch failed every attempt it made, and how (`slow`: all
     * timed out; `fast` counts only past FAILING_AFTER_ANSWER_MS from an answer). Their
     * deliveries, first attempts and retries alike, share two lanes of the shard,
     * `~slow/retry` and `~fast/retry`, batched together across installations: 100
     * installations whose receivers hang or refuse, at an event a second each, would
     * otherwise keep a batch each (or several) in flight, an activity a delivery, and take
     * the run's 500 places and the machine's time from the receivers that answer. One answer
     * of their receiver that is not a failure gives them their own lanes back (what waits in
     * the shared lanes stays there). Their retries keep their times, but wait for a place
     * in the shared lanes. A run continued as new is handed them.
     */
    private readonly failing = new Map<string, FailingKind>(),
  ) {
    for (const entry of input.entries ?? []) this.add(entry);
  }

  /**
   * An installation's first attempts and its retries are batched apart, in lanes of their
   * own: a retry goes out when due, not after the first attempts in flight, and a slow
   * receiver holds its lanes' slots (LANE_BATCHES and RETRY_LANE_BATCHES) at most.
   */
  laneOf(entry: ShardEntry): string {
    const failing = this.rules.sharesFailing ? this.failing.get(entry.installationId) : undefined;
    if (failing) return sharedLane(failing);
    if (this.rules.lanes && entry.attempt > 1) return `${entry.installationId}/retry`;
    return this.prompt.has(entry.installationId) ? PROMPT_LANE : entry.installationId;
  }

  /** When a waiting entry goes to its lane. */
  readyAt(entry: ShardEntry): number {
    return this.rules.led && entry.notBefore !== undefined ? entry.dueAt - this.rules.lead : entry.dueAt;
  }

  private makeReady(entry: ShardEntry): void {
    const list = this.ready.get(this.laneOf(entry));
    if (list) list.push(entry);
    else this.ready.set(this.laneOf(entry), [entry]);
  }

  private add(entry: ShardEntry): void {
    this.known.add(entry.id);
    if (this.readyAt(entry) > Date.now()) this.waiting.push(entry);
    else this.makeReady(entry);
    this.changed = true;
  }

  /** Takes what is new of a hand-over (a delivery handed over twice is attempted once); answers how many. */
  accept(items: ShardItem[]): number {
    this.handOvers += 1;
    let added = 0;
    for (const item of items) {
      // What the log said of its receiver at hand-over, unless this run has seen one of its attempts since.
      if (this.rules.hinted && item.failing && !this.seen.has(item.installationId)) this.markFailing(item.installationId, item.failing);
      // Newer than a failing hint: the receiver answered promptly since (and the other way round).
      if (this.rules.promptHinted && !this.seen.has(item.installationId)) {
        if (item.prompt) {
          this.prompt.add(item.installationId);
          this.failing.delete(item.installationId);
          // The log says it answered its last batch promptly: as good as an answer this run saw (see FAILING_AFTER_ANSWER_MS).
          if (this.rules.failingAfterAnswer) this.answeredAt.set(item.installationId, Date.now());
        } else if (item.failing) this.prompt.delete(item.installationId);
      }
      if (this.known.has(item.id)) continue;
      this.add({ id: item.id, installationId: item.installationId, ...(item.trace && { trace: item.trace }), attempt: 1, dueAt: 0 });
      added += 1;
    }
    return added;
  }

  /** A batch leaves for its attempts: answers its number, for `ended`. */
  started(lane: string, entries: ShardEntry[]): number {
    this.laneFlights.set(lane, (this.laneFlights.get(lane) ?? 0) + 1);
    const batch = ++this.batches;
    this.flying.set(batch, { entries, startedAt: Date.now() });
    return batch;
  }

  /** A batch's results: finished deliveries are forgotten, retries wait for their time. */
  settle(lane: string, entries: ShardEntry[], results: AttemptBatchResult[]): void {
    this.noteHanging(lane, results);
    this.noteReceivers(entries, results);
    const byId = new Map(results.map((result) => [result.id, result]));
    for (const entry of entries) {
      const result = byId.get(entry.id);
      this.known.delete(entry.id);
      if (result?.retryInMs === undefined) continue;
      // Led, a retry is due at the time the attempt's worker chose (retryAt), which the
      // batch waits for: the trip of this result to the workflow does not lengthen the wait.
      const notBefore = this.rules.led ? result.retryAt : undefined;
      // Not attempted (`again`: no room for integration code) is the same attempt, later.
      this.add({ ...entry, attempt: result.again ? entry.attempt : entry.attempt + 1, dueAt: notBefore ?? Date.now() + result.retryInMs, ...(notBefore !== undefined && { notBefore, clock: result.clock }) });
    }
  }

  ended(lane: string, batch: number): void {
    const left = this.laneFlights.get(lane)! - 1;
    if (left) this.laneFlights.set(lane, left);
    else this.laneFlights.delete(lane);
    this.flying.delete(batch);
    this.changed = true;
  }

  /** Where the batch left its installations' receivers: failing (their shared lanes), prompt (the prompt lane), or neither. */
  private noteReceivers(entries: ShardEntry[], results: AttemptBatchResult[]): void {
    const { sharesFailing, sharesPrompt, interruptionsFree } = this.rules;
    if (!sharesFailing) return;
    const installationOf = new Map(entries.map((entry) => [entry.id, entry.installationId]));
    const attempted = results.filter((result) => installationOf.has(result.id) && (result.statusCode !== undefined || result.error !== undefined));
    for (const [installation, state] of receiverStatesOf(attempted.map((result) => ({ ...result, installationId: installationOf.get(result.id)! })), !interruptionsFree)) {
      this.seen.add(installation);
      if (isFailing(state)) {
        // Failing fast so soon after an answer, the batch moves it nowhere (see FAILING_AFTER_ANSWER_MS); one that hangs moves at once.
        if (this.rules.failingAfterAnswer && state === 'fast' && Date.now() - (this.answeredAt.get(installation) ?? -Infinity) < FAILING_AFTER_ANSWER_MS) continue;
        this.markFailing(installation, state);
      } else {
        this.failing.delete(installation);
        if (this.rules.failingAfterAnswer) this.answeredAt.set(installation, Date.now());
      }
      if (sharesPrompt && state === 'prompt') this.prompt.add(installation);
      else this.prompt.delete(installation);
    }
  }

  /**
   * An installation's receiver fails every attempt (a batch's results say so, or a
   * hand-over's hint): its deliveries go to the shared lane of that kind, those it has
   * queued too (not back again: once it answers, what waits in the shared lane goes in a
   * shared batch). Left in its own lanes, what queued behind a receiver's first batch went
   * out as one more batch of its own when that one returned, to hang for the attempt
   * timeout again: in bench (g), a hundred such batches 10 s after a hundred receivers began to
   * hang, each a worker slot and workflow tasks of the one shard run that another tenant's
   * hand-overs wait for.
   */
  private markFailing(installation: string, kind: FailingKind): void {
    const wasFailing = this.failing.has(installation);
    this.failing.set(installation, kind);
    // Queued in a shared lane already, it stays there (a receiver that turns from refusing to hanging moves nothing).
    if (!this.rules.queuedFollow || wasFailing) return;
    // The prompt lane too (from `failing-after-answer`, even once out of it: what it queued there before a batch lagged stays there).
    const lanes = [installation, `${installation}/retry`, ...(this.rules.failingAfterAnswer || this.prompt.has(installation) ? [PROMPT_LANE] : [])];
    for (const lane of lanes) {
      const list = this.ready.get(lane);
      if (!list) continue;
      const leaving = list.filter((entry) => entry.installationId === installation);
      if (!leaving.length) continue;
      const staying = list.filter((entry) => entry.installationId !== installation);
      if (staying.length) this.ready.set(lane, staying);
      else this.ready.delete(lane);
      leaving.forEach((entry) => this.makeReady(entry));
    }
  }

  private noteHanging(lane: string, results: AttemptBatchResult[]): void {
    // A first-attempt lane starts partial batches one at a time anyway; shared lanes take partial batches side by side.
    if (!this.rules.holdsHanging || !isRetryLane(lane) || isSharedLane(lane)) return;
    const attempted = results.filter((result) => result.statusCode !== undefined || result.error !== undefined);
    if (attempted.length === 0) return;
    if (attempted.every((result) => result.error === 'timeout')) this.hanging.add(lane);
    else this.hanging.delete(lane);
  }

  /** Retries due by now go to their lanes; led, those due soon after the earliest go with it: one batch, not one per timer. */
  releaseDue(now: number): void {
    const horizon = this.rules.led && this.waiting.some((entry) => entry.notBefore !== undefined && this.readyAt(entry) <= now) ? now + this.rules.group : now;
    const due = this.waiting.filter((entry) => this.readyAt(entry) <= horizon);
    if (due.length) {
      this.waiting = this.waiting.filter((entry) => this.readyAt(entry) > horizon);
      due.forEach((entry) => this.makeReady(entry));
    }
  }

  /**
   * The batches to start now, lane by lane. Each is started (see `started`) before the
   * next is chosen: the caps count it.
   */
  *batchesToStart(): Generator<[string, ShardEntry[]]> {
    const { lanes, pipelined } = this.rules;
    for (const [lane, entries] of this.ready) {
      if (lanes && this.flying.size >= MAX_BATCHES_IN_FLIGHT) break;
      const inFlight = this.laneFlights.get(lane) ?? 0;
      if (inFlight && (!pipelined || !mayAddBatch(lane, inFlight, entries.length, this.rules) || (this.hanging.has(lane) && entries.length < BATCH))) continue;
      const batch = entries.splice(0, BATCH);
      if (entries.length === 0 || lanes) this.ready.delete(lane);
      // What is left goes to the back (visited again below): under the cap, lanes take turns.
      if (entries.length && lanes) this.ready.set(lane, entries);
      yield [lane, batch];
    }
  }

  /** When the run must look again without a hand-over or a result: the waiting retries' times. */
  readyTimes(): number[] {
    return this.waiting.map((entry) => this.readyAt(entry));
  }

  /** Its hand-overs are spent (the history bound is the caller's to judge). */
  handOversSpent(): boolean {
    return this.handOvers >= (this.input.handOversPerRun ?? HAND_OVERS_PER_RUN);
  }

  /**
   * An epoch's run holding more than the bound (several API processes' hand-overs while no
   * worker answered) hands over only once it holds less: what it carries must fit 2 MB.
   * Until it fits, the run goes on with what it holds, which its retries' ends shrink.
   */
  carriable(): boolean {
    const carriedBytes = () => JSON.stringify([...this.ready.values(), this.waiting, ...[...this.flying.values()].map(({ entries }) => entries)]).length;
    return this.input.epochEndsAt === undefined || (this.known.size <= MAX_BACKLOG && (!this.rules.bytesBounded || this.known.size <= ALWAYS_CARRIABLE || carriedBytes() <= MAX_CARRIED_BYTES));
  }

  /** What the next run is handed: queued, waiting, and (after the time it needs to end) what is still in flight. */
  carried(): { entries: ShardEntry[]; hanging?: string[]; failing?: [string, FailingKind][] } {
    // Carried, a retry's time is long past: it waits for its batch's delay, with no lead.
    const inFlight = [...this.flying.values()].flatMap(({ entries, startedAt }) => entries.map(({ notBefore: _time, clock: _clock, ...entry }) => ({ ...entry, dueAt: Math.max(entry.dueAt, startedAt + CARRIED_BATCH_DELAY_MS) })));
    const entries = [...[...this.ready.values()].flat(), ...this.waiting, ...inFlight];
    // A hanging receiver's retries carried over must not take a batch each in the next run.
    const hanging = [...new Set(entries.map((entry) => this.laneOf(entry)))].filter((lane) => this.hanging.has(lane));
    // Nor may failing receivers take their own lanes again (those with nothing carried are found out again if they come back).
    const installations = new Set(entries.map((entry) => entry.installationId));
    const failing = [...this.failing].filter(([installation]) => installations.has(installation));
    return { entries, ...(this.hanging.size && { hanging }), ...(failing.length && { failing }) };
  }
}
