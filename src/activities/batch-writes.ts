import { startedKey, type AttemptRecords } from '../delivery-log/attempt-records';
import type { HealthChange } from '../delivery-log/receiver-health';
import type { DeliveryOutcome, StartedAttempt } from '../delivery-log/types';
import { GroupCommit } from '../group-commit';
import type { Logger } from '../logger';

type Run = { workflowId: string; runId: string };

/** Batches' writes of outcomes in one transaction at most (each up to a batch's 100 outcomes). */
const OUTCOME_WRITES_TOGETHER = 20;

/**
 * What every attempt batch of the process writes to the log, in shared transactions. Each
 * attempt is written as started before it goes out, so that a worker dying before its
 * answer is recorded leaves a trace (see interruptedRecord): the attempts of every batch
 * starting in one turn of the event loop share one write. Outcomes are written as they
 * come (see OutcomeRecorder), and those of batches writing together share a transaction:
 * beside 200 failing receivers, a transaction per batch's write made commits 40% of the
 * time the log took.
 */
export function createBatchWrites(deps: { attempts: AttemptRecords; logger: Logger; afterOutcomes?: (changes: HealthChange[]) => Promise<void> }) {
  /** Answers each attempt's claim: false when another run wrote it first, or the delivery has ended or counted it since (see recordStarted). */
  const starts = new GroupCommit<{ started: StartedAttempt; run: Run }, boolean>(async (items) => {
    const runOf = ({ run }: (typeof items)[number]) => `${run.workflowId}/${run.runId}`;
    const byRun = new Map<string, typeof items>();
    for (const item of items) byRun.set(runOf(item), [...(byRun.get(runOf(item)) ?? []), item]);
    const claimed = new Map<string, Set<string>>();
    for (const [run, part] of byRun) claimed.set(run, await deps.attempts.recordStarted(part.map((item) => item.started), part[0]!.run));
    return items.map((item) => claimed.get(runOf(item))!.has(startedKey(item.started.deliveryId, item.started.attempt)));
  }, 1000);
  const outcomeWrites = new GroupCommit<{ outcomes: DeliveryOutcome[]; run: Run }, void>(async (writes) => {
    const health = await deps.attempts.recordWrites(writes);
    if (health.length) await deps.afterOutcomes?.(health).catch((err: Error) => deps.logger.warn({ err: err.message }, 'receivers’ health not checked after a write; the next write checks'));
    return writes.map(() => undefined);
  }, OUTCOME_WRITES_TOGETHER);
  return { starts, outcomeWrites };
}
