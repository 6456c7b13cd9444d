import type { ReceiverStanding } from '../delivery-log/health-reads';
import { FAILING_AFTER_ANSWER_MS, isFailing, type ReceiverState } from '../webhooks/schedule';

/** How often, at most, the log is asked what changed. */
const READ_EVERY_MS = 1000;
/** How often every state is read again (a change missed by a read of changes, a clock apart, is mended then). */
const READ_ALL_EVERY_MS = 60_000;
/** A read of changes starts this long before the last good read began: writes of other processes commit late, their clocks differ. */
const OVERLAP_MS = 5000;
/**
 * How long a receiver fails every attempt before its installation's new events are held:
 * the attempt timeout, so that one slow batch, or a deploy's few seconds of 503s, holds
 * nothing.
 */
export const HOLD_AFTER_MS = 10_000;

/**
 * Where installations' receivers stand (failing, and how, and since when; prompt), as the
 * log said at most a second ago: hand-overs carry it to shards of later epochs (see
 * ShardItem's `failing` and `prompt`), and fan-out holds the new events of those failing
 * long enough. A hint, not a rule: asking never waits for the log (the last answer is
 * given, a fresh read starts behind it), and a failed read keeps the last answer. After
 * the first read, each reads only what was written since the last (prompt receivers are
 * most of them); all are read again every minute.
 */
export class ReceiverStates {
  /** With, for a receiver failing, whether it was prompt before it began to. */
  private known = new Map<string, ReceiverStanding & { before?: 'prompt' }>();
  private readAt = -Infinity;
  /** When the last read that answered began, and the last of all. */
  private answeredFrom = -Infinity;
  private readAllAt = -Infinity;
  private reading = false;

  constructor(
    private readonly read: (since?: number) => Promise<Map<string, ReceiverStanding>>,
    private readonly holdAfterMs = HOLD_AFTER_MS,
  ) {}

  /**
   * Where its receiver stands, as a shard is told: one failing fast for less than
   * FAILING_AFTER_ANSWER_MS as it stood before (a hanging one is known only at its first
   * timeout, and told at once).
   */
  stateOf(installationId: string, now = Date.now()): ReceiverState | undefined {
    this.refresh();
    const standing = this.known.get(installationId);
    if (standing?.state === 'fast' && standing.failingFrom !== undefined && now - standing.failingFrom < FAILING_AFTER_ANSWER_MS) return standing.before;
    return standing?.state;
  }

  /** Whether its receiver has failed every attempt for holdAfterMs: its new events are held (see holdsWhileFailing). */
  holding(installationId: string, now = Date.now()): boolean {
    this.refresh();
    const standing = this.known.get(installationId);
    return standing !== undefined && isFailing(standing.state) && standing.failingFrom !== undefined && now - standing.failingFrom >= this.holdAfterMs;
  }

  private refresh(): void {
    const now = Date.now();
    if (this.reading || now - this.readAt < READ_EVERY_MS) return;
    const all = now - this.readAllAt >= READ_ALL_EVERY_MS;
    const since = all ? undefined : this.answeredFrom - OVERLAP_MS;
    this.readAt = now;
    this.reading = true;
    this.read(since).then(
      (states) => {
        this.answeredFrom = now;
        const previous = this.known;
        if (all) [this.known, this.readAllAt] = [new Map(), now];
        for (const [installationId, standing] of states) {
          const was = previous.get(installationId);
          const before = isFailing(standing.state) ? (was?.state === 'prompt' ? 'prompt' : was?.before) : undefined;
          if (standing.state) this.known.set(installationId, { ...standing, ...(before && { before }) });
          else this.known.delete(installationId);
        }
      },
      () => undefined,
    ).finally(() => (this.reading = false));
  }
}
