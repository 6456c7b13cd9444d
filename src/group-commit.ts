/** A submission not answered by its deadline: it is not known to be committed. */
export class DeadlineError extends Error {}

interface Entry<Item, Result> {
  item: Item;
  deadline: number;
  resolve: (result: Result) => void;
  reject: (err: unknown) => void;
}

/**
 * Coalesces concurrent submissions into batches, as a database's group commit does: one
 * flush in flight at a time; whatever arrives meanwhile waits and goes in the next one,
 * up to `maxItems`. Each submitter gets its own item's result, or the flush's error, or a
 * DeadlineError at its deadline if neither came by then: a flush that hangs answers its
 * own items and those queued behind it in time. An item still queued at its deadline is
 * left out of the flushes; one whose flush was under way may still be committed.
 */
export class GroupCommit<Item, Result> {
  private queue: Entry<Item, Result>[] = [];
  private flushing = false;

  constructor(
    private readonly flush: (items: Item[]) => Promise<Result[]>,
    private readonly maxItems: number,
  ) {}

  submit(item: Item, deadline = Infinity): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = <T>(end: (value: T) => void) => (value: T) => {
        clearTimeout(timer);
        end(value);
      };
      const entry: Entry<Item, Result> = { item, deadline, resolve: settle(resolve), reject: settle(reject) };
      if (Number.isFinite(deadline)) timer = setTimeout(() => reject(new DeadlineError('no answer within the deadline')), Math.max(0, deadline - Date.now()));
      this.queue.push(entry);
      if (this.flushing) return;
      // Starts once the requests read in this turn of the event loop have submitted (a batch
      // ingest's events among them), so that they go together.
      this.flushing = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      const now = Date.now();
      // Those past their deadline were answered (DeadlineError) and go no further.
      const batch = this.queue.splice(0, this.maxItems).filter((entry) => entry.deadline > now);
      if (batch.length === 0) continue;
      try {
        const results = await this.flush(batch.map((entry) => entry.item));
        batch.forEach((entry, i) => entry.resolve(results[i]!));
      } catch (err) {
        batch.forEach((entry) => entry.reject(err));
      }
    }
    this.flushing = false;
  }
}
