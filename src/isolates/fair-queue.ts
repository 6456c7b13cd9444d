/**
 * Runs tasks one at a time, owners in turn: each owner's tasks in the order given, one task
 * of each owner with any waiting before a second of any. A workerd start blocks the event
 * loop for 20-30 ms (miniflare builds and encodes its configuration); eight at once blocked
 * it for 100-145 ms in one piece, and every other tenant's call waited. One at a time, each
 * stall is one start's, and another organization's start goes next, whatever one has queued.
 */
export class FairQueue {
  /** By owner, in the order their turns come (Map order: an owner served goes to the back). */
  private readonly waiting = new Map<string, (() => Promise<void>)[]>();
  private running = false;

  run<T>(owner: string, task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const queued = this.waiting.get(owner);
      const entry = () => task().then(resolve, reject);
      if (queued) queued.push(entry);
      else this.waiting.set(owner, [entry]);
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    for (let next = this.waiting.entries().next(); !next.done; next = this.waiting.entries().next()) {
      const [owner, tasks] = next.value;
      const task = tasks.shift()!;
      this.waiting.delete(owner);
      if (tasks.length) this.waiting.set(owner, tasks);
      await task();
    }
    this.running = false;
  }
}
