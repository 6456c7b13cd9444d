import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { lineWorkflowId, ORDERED_LINE_WORKFLOW, wakeLineSignal, type OrderedLineWorkflow } from '../workflows/line-contract';
import { backlogQuery, DELIVERY_EPOCH_WORKFLOW, EPOCH_MS, handOverSignal, MAX_BACKLOG, shardOf, shardWorkflowId, type DeliveryEpochWorkflow, type ShardItem } from '../workflows/shard-contract';

/** How long ingest waits for the engine before answering 503 (with what follows, within 2 s). */
export const ENGINE_DEADLINE_MS = 1500;
/** How long the backlog figures of a past epoch are kept. */
const KEPT_BACKLOGS_MS = 60_000;
/** How old a shard's backlog figure may grow before it is asked again (in the background while under the bound). */
const BACKLOG_REFRESH_MS = 500;

/** Limits of the delivery shards; tests make them small. */
export interface ShardLimits {
  /** Hand-overs before a shard run continues as new (the workflow's default unless set). */
  handOversPerRun?: number;
  /** Deliveries a shard's workflow may hold before ingest answers 503 (MAX_BACKLOG unless set). */
  maxBacklog?: number;
  /** How long each shard workflow takes hand-overs (EPOCH_MS unless set). */
  epochMs?: number;
}

/** A shard holds as many deliveries as it may: the caller answers 503 with Retry-After. */
export class ShardBusyError extends Error {}

/** What this process knows of a shard workflow's backlog: its last answer, and what was handed over since it was asked. */
interface Backlog {
  epoch: number;
  held: number;
  sentSince: number;
  askedAt: number;
  asking?: Promise<void>;
}

/**
 * Hands deliveries to their shard's workflow of the epoch they were recorded in (started
 * on first use) as signals, with a deadline: an engine that does not answer in time is
 * unavailable, and the caller says so (503). A signal cannot be refused by the workflow,
 * so the bound on what each epoch's workflow holds is kept here, per process: from its
 * backlog (queried at most twice a second) plus what this process handed over since.
 */
export class ShardClient {
  /** By `<shard>/<epoch>`. */
  private readonly backlogs = new Map<string, Backlog>();
  private readonly epochMs: number;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    readonly shards: number,
    private readonly limits: ShardLimits = {},
  ) {
    this.epochMs = limits.epochMs ?? EPOCH_MS;
  }

  shardOf(eventId: string): number {
    return shardOf(eventId, this.shards);
  }

  /** The epoch of a moment: deliveries recorded in it are handed to that epoch's workflow, also when handed over again. */
  epochOf(at: number): number {
    return Math.floor(at / this.epochMs);
  }

  /**
   * Hands deliveries to the shard's workflow of `epoch` (the one they were recorded in):
   * handed over again, a delivery goes where it went first, whose workflow skips what it
   * holds (or, if it never arrived there, is started again to attempt it).
   */
  async enqueue(shard: number, items: ShardItem[], epoch = this.epochOf(Date.now()), deadline = Date.now() + ENGINE_DEADLINE_MS): Promise<void> {
    if (items.length === 0) return;
    // One deadline for the backlog's question and the signal: the caller answers within 2 s.
    const backlog = this.backlogOf(shard, epoch);
    await this.admit(shard, backlog, items.length, deadline);
    await this.client.withDeadline(deadline, () =>
      this.client.workflow.signalWithStart<DeliveryEpochWorkflow, [ShardItem[]]>(DELIVERY_EPOCH_WORKFLOW, {
        workflowId: shardWorkflowId(shard, epoch),
        taskQueue: this.taskQueue,
        args: [{ shard, epochEndsAt: (epoch + 1) * this.epochMs, ...(this.limits.handOversPerRun && { handOversPerRun: this.limits.handOversPerRun }) }],
        signal: handOverSignal,
        signalArgs: [items],
      }),
    );
    backlog.sentSince += items.length;
  }

  /** Wakes an ordered installation's line (started if it is not running): deliveries were recorded for it. */
  async wakeLine(installationId: string, deadline = Date.now() + ENGINE_DEADLINE_MS): Promise<void> {
    await this.client.withDeadline(deadline, () =>
      this.client.workflow.signalWithStart<OrderedLineWorkflow, []>(ORDERED_LINE_WORKFLOW, { workflowId: lineWorkflowId(installationId), taskQueue: this.taskQueue, args: [installationId], signal: wakeLineSignal }),
    );
  }

  /** Refuses a hand-over past the bound, once a fresh answer of the shard (by the deadline) confirms it. */
  private async admit(shard: number, backlog: Backlog, count: number, deadline: number): Promise<void> {
    const max = this.limits.maxBacklog ?? MAX_BACKLOG;
    const over = () => backlog.held + backlog.sentSince + count > max;
    if (!over()) {
      // Only the current epoch's figure is kept fresh: a past epoch's workflow takes only
      // deliveries recorded in it handed over again (a repeat, a sweep), and asking it (a
      // closed run, often) would replay its whole history on a worker.
      if (backlog.epoch >= this.epochOf(Date.now()) && performance.now() - backlog.askedAt > BACKLOG_REFRESH_MS) void this.ask(shard, backlog);
      return;
    }
    await Promise.race([this.ask(shard, backlog), new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref())]);
    if (over()) throw new ShardBusyError(`delivery shard ${shard} holds ${backlog.held + backlog.sentSince} deliveries (at most ${max}); try again shortly`);
  }

  /** Asks the shard how many deliveries it holds; one question at a time, and no answer keeps the last figure. */
  private ask(shard: number, backlog: Backlog): Promise<void> {
    backlog.asking ??= (async () => {
      const sentBefore = backlog.sentSince;
      try {
        backlog.held = await this.client
          .withDeadline(Date.now() + ENGINE_DEADLINE_MS, () => this.client.workflow.getHandle(shardWorkflowId(shard, backlog.epoch)).query(backlogQuery))
          .catch((err) => (err instanceof WorkflowNotFoundError ? 0 : Promise.reject(err)));
        backlog.sentSince -= sentBefore;
      } catch {
        // No answer in time: what was handed over since still counts.
      } finally {
        backlog.askedAt = performance.now();
        backlog.asking = undefined;
      }
    })();
    return backlog.asking;
  }

  /**
   * The figures of a shard's workflow of one epoch (a new one starts with nothing); those of
   * epochs a minute past are dropped: hand-overs to them are rare (an event retried late).
   */
  private backlogOf(shard: number, epoch: number): Backlog {
    const key = `${shard}/${epoch}`;
    let backlog = this.backlogs.get(key);
    if (!backlog) {
      const stale = this.epochOf(Date.now() - KEPT_BACKLOGS_MS);
      for (const [other, { epoch: old }] of this.backlogs) if (old < stale) this.backlogs.delete(other);
      this.backlogs.set(key, (backlog = { epoch, held: 0, sentSince: 0, askedAt: -Infinity }));
    }
    return backlog;
  }
}
