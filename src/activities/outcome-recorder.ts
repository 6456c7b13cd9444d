import type { DeliveryOutcome } from '../delivery-log/types';

/**
 * Writes an attempt batch's outcomes as they come: an outcome waits `everyMs` at most for
 * others to share its transaction (and for the write before to end), and `close` writes
 * the rest. A worker that dies mid-batch has the batch run again, which sends again only
 * what was sent and not yet written (`everyMs` of attempts and those in flight), not the
 * whole batch: with one write at the batch's end, a worker killed at 1,000 events/s had
 * 300 deliveries POSTed twice.
 */
export class OutcomeRecorder {
  private queued: DeliveryOutcome[] = [];
  /** When the last queued outcome came (ms since 1970). */
  private lastAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private aborted = false;

  constructor(
    private readonly write: (outcomes: DeliveryOutcome[], lastAt: number) => Promise<void>,
    private readonly everyMs: number,
  ) {}

  add(outcome: DeliveryOutcome): void {
    if (this.aborted) return;
    this.queued.push(outcome);
    this.lastAt = Date.now();
    this.timer ??= setTimeout(() => void this.flush(), this.everyMs);
  }

  /** Writes what is left; rejects with the first write that failed (the batch then runs again). */
  async close(): Promise<void> {
    await this.flush();
    if (this.failure) throw this.failure.error;
  }

  /** The batch failed: nothing more is written; resolves once a write in progress has ended. */
  async abort(): Promise<void> {
    this.aborted = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queued = [];
    await this.writing;
  }

  private flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const part = this.queued;
    const lastAt = this.lastAt;
    this.queued = [];
    if (part.length) {
      this.writing = this.writing.then(() => this.write(part, lastAt)).catch((error: unknown) => {
        this.failure ??= { error };
      });
    }
    return this.writing;
  }
}
