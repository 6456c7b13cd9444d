import type { InstallationProjection } from '../installations/types';
import { WEBHOOK_INTEGRATION } from '../installations/webhook';
import type { AttemptRecord, DeliveryOutcome, DeliveryToAttempt, StartedAttempt } from '../delivery-log/types';
import { attemptDuration, attemptsInterrupted, deliveriesFinished, logWriteLag, reasonLabel, retriesScheduled, statusClass } from '../metrics';
import { MAX_RETRIES, retryDelayMs, verdict } from '../webhooks/schedule';

/** What one attempt comes to: delivered, failed, retried after its wait, or not attempted at all; and the metrics of a write. */

/**
 * Interrupted attempts (their answers never seen: the worker stopped or died) a delivery is
 * not charged for, at most: the receiver's failures, not the platform's, use up its retries,
 * so one the receiver answered 2xx before a crash is not recorded failed for it. Past this
 * many (a worker that keeps dying), they count.
 */
const FREE_INTERRUPTIONS = 3;

/**
 * The outcome of one attempt: final, or retried after the wait it chose (recorded with it).
 * Its place in the schedule leaves out the free interrupted attempts before it and itself.
 */
export function judge(id: string, record: AttemptRecord, interruptedBefore: number, retryAfterMs?: number): DeliveryOutcome {
  const retry = record.attempt - Math.min(FREE_INTERRUPTIONS, interruptedBefore + (record.error === 'interrupted' ? 1 : 0));
  const next = verdict(record);
  if (next === 'delivered') return { id, status: 'delivered', attempt: record };
  if (next === 'failed' || retry > MAX_RETRIES) return { id, status: 'failed', attempt: record };
  return { id, status: 'pending', attempt: { ...record, nextDelayMs: record.nextDelayMs ?? retryDelayMs(Math.max(1, retry), Math.random(), retryAfterMs) } };
}

/** What an attempt an earlier run started, and never recorded, is recorded as: its answer is unknown. */
export const interruptedRecord = (started: StartedAttempt): AttemptRecord => ({
  attempt: started.attempt,
  startedAt: started.startedAt,
  durationMs: 0,
  url: started.url,
  error: 'interrupted',
  errorMessage: 'the worker making it stopped before its answer was recorded: the receiver may have had it (its duration is unknown)',
});

/**
 * An installation that stopped listening after fan-out stops the delivery. A pause always
 * ends it as a replayable failure, before its first attempt too: the event was accepted for
 * it, and a resume must be able to bring it back (fan-out itself records `skipped` for an
 * installation already paused). Deleted or no longer selecting the event, before any
 * attempt it is "not for it" (`skipped`: a replay could not change that); after one, a
 * failure.
 */
export function notAttempted(delivery: DeliveryToAttempt, attempt: number, target: InstallationProjection | undefined): DeliveryOutcome | undefined {
  const stopped = !target || target.status === 'deleted' ? 'installation_deleted' : target.status === 'paused' ? 'installation_paused' : undefined;
  const unreachable = target?.integration === WEBHOOK_INTEGRATION && !target.url;
  const reason = stopped ?? (unreachable || !target?.events.includes(delivery.eventType) ? 'event_not_selected' : undefined);
  if (!reason) return undefined;
  return { id: delivery.id, status: attempt === 1 && reason !== 'installation_paused' ? 'skipped' : 'failed', reason };
}

/** Metrics of a write of a batch: attempts by outcome class, retries, finished deliveries, the log's lag. */
export function observe(written: DeliveryOutcome[], attemptedNow: Map<string, unknown>, deliveries: Map<string, DeliveryToAttempt>, attemptsEnded: number): void {
  logWriteLag.observe((Date.now() - attemptsEnded) / 1000);
  for (const outcome of written) {
    // An attempt recorded by an earlier run of this batch was counted then.
    if (outcome.attempt && attemptedNow.has(outcome.id)) attemptDuration.observe({ status_class: statusClass(outcome.attempt.statusCode) }, outcome.attempt.durationMs / 1000);
    if (outcome.attempt?.error === 'interrupted') attemptsInterrupted.inc({ cause: attemptedNow.has(outcome.id) ? 'stopped' : 'died' });
    if (outcome.status === 'pending') retriesScheduled.inc();
    else deliveriesFinished.inc({ status: outcome.status, event_type: deliveries.get(outcome.id)?.eventType ?? 'unknown', reason: reasonLabel(outcome.reason) });
  }
}
