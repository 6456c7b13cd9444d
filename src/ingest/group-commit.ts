/**
 * Coalesces concurrent submissions into batches, as a database's group commit does: one
 * flush in flight at a time; whatever arrives meanwhile waits and goes in the next one,
 * up to `maxItems`. Each submitter gets its own item's result, or the flush's error.
 */
export class GroupCommit<Item, Result> {
  private queue: { item: Item; resolve: (result: Result) => void; reject: (err: unknown) => void }[] = [];
  private flushing = false;

  constructor(
    private readonly flush: (items: Item[]) => Promise<Result[]>,
    private readonly maxItems: number,
  ) {}

  submit(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.flushing) return;
      // Starts once the requests read in this turn of the event loop have submitted (a batch
      // ingest's events among them), so that they go together.
      this.flushing = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.maxItems);
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
