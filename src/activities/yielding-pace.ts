/** First attempts kept for FirstAttemptLag's window: at a thousand a second, the last half second. */
const SAMPLES = 512;
/**
 * A first attempt made this long after its record has waited for something other than the
 * worker: a stranded delivery, handed over again a minute after its record.
 */
const LIVE_MS = 30_000;
/**
 * The quickest first attempt of the last one or two of these periods is the lag's floor: a
 * minute or two, so that a replay that delays every first attempt for long does not make
 * its delay the floor in seconds.
 */
const FLOOR_PERIOD_MS = 60_000;

/**
 * How long after its record each first attempt of a new event was made in this process
 * (which ones count, the attempt batch decides: see its isNew): what a background
 * hand-over must not make longer. A ring of the latest, read by window, and the lag's
 * floor: the quickest of the last one to two minutes, what ingest, Temporal and the log
 * take with no queue ahead (as TCP Vegas takes the least round trip for the path's own).
 * How much later than the floor first attempts start is how long they queued.
 */
export class FirstAttemptLag {
  private readonly at = new Float64Array(SAMPLES);
  private readonly lagMs = new Float64Array(SAMPLES);
  private next = 0;
  private count = 0;
  private floor = { period: -1, least: Infinity, before: Infinity };

  note(lagMs: number): void {
    if (lagMs > LIVE_MS) return;
    const now = performance.now();
    this.at[this.next] = now;
    this.lagMs[this.next] = lagMs;
    this.next = (this.next + 1) % SAMPLES;
    this.count = Math.min(SAMPLES, this.count + 1);
    const period = Math.floor(now / FLOOR_PERIOD_MS);
    if (period !== this.floor.period) this.floor = { period, least: Infinity, before: period === this.floor.period + 1 ? this.floor.least : Infinity };
    this.floor.least = Math.min(this.floor.least, lagMs);
  }

  /** The quickest first attempt of this period and the one before (Infinity when none was noted). */
  get floorMs(): number {
    return Math.min(this.floor.least, this.floor.before);
  }

  /** The median of the lags noted since `from` (performance.now()), the lower of the two middle ones; undefined when none was. */
  medianSince(from: number): number | undefined {
    const lags: number[] = [];
    for (let i = 0; i < this.count; i++) if (this.at[i]! >= from) lags.push(this.lagMs[i]!);
    if (lags.length === 0) return undefined;
    lags.sort((a, b) => a - b);
    return lags[Math.ceil(lags.length / 2) - 1];
  }
}

export interface YieldingPaceOptions {
  /** The gap when nothing asks for room: the fastest pace. */
  baseMs: number;
  /** The longest gap: the slowest pace, so that a backlog always moves. */
  maxMs: number;
  /** After this long with no wait (no operation ran), the gap starts again from its base: what the last one met is over. */
  idleMs: number;
  /** How much later than the lag's floor (see FirstAttemptLag) new events' first attempts may start, at the median over a gap, before they count as delayed. */
  delayMs: number;
}

/**
 * The pace of background hand-overs (bulk replays, releases of held deliveries): they take
 * the room that new events leave. After each gap, it looks at the first attempts of new
 * events made in this process meanwhile: if they started more than `delayMs` later than
 * their floor (at the median: on an idle worker the slowest tenth is 30 ms past the floor
 * in 7-15% of gaps, which kept a replay near its slowest for nothing), the next gap
 * doubles; otherwise it shrinks back by one base step. A backlog goes as fast as the
 * worker has room for, instead of a fixed share of it whatever else asks. Not by how late
 * its own timers fire: on a machine busy with other work (a CI run's other tests) that
 * held a replay at its slowest with no new event to give way to.
 *
 * One pace per process, shared by its operations: their gaps are one, though each hands
 * over its own parts (two replays at once go twice as fast as one).
 */
export class YieldingPace {
  private gapMs: number;
  /** When the last wait ended (performance.now()). */
  private lastAt = -Infinity;

  constructor(
    private readonly options: YieldingPaceOptions,
    private readonly firstAttempts: FirstAttemptLag,
  ) {
    this.gapMs = options.baseMs;
  }

  /** Waits the current gap with `sleep` (a cancellable one), then sets the next gap by what happened meanwhile. */
  async wait(sleep: (ms: number) => Promise<void>): Promise<void> {
    const { baseMs, maxMs, idleMs, delayMs } = this.options;
    const from = performance.now();
    if (from - this.lastAt > idleMs) this.gapMs = baseMs;
    const asked = this.gapMs;
    await sleep(asked);
    this.lastAt = performance.now();
    // No first attempt in the gap says nothing of them.
    const median = this.firstAttempts.medianSince(from);
    const delayed = median !== undefined && median - this.firstAttempts.floorMs > delayMs;
    // From what this wait asked: operations waiting side by side move the gap once a gap, not once each.
    this.gapMs = delayed ? Math.min(maxMs, asked * 2) : Math.max(baseMs, asked - baseMs);
  }

  /** The gap the next wait takes. */
  get nextGapMs(): number {
    return this.gapMs;
  }
}
