import { CancelledFailure, Context } from '@temporalio/activity';
import type { AttemptRecords } from '../delivery-log/attempt-records';
import type { HealthChange } from '../delivery-log/receiver-health';
import type { InstallationIndex } from '../installations/read-model';
import type { DeliveryOutcome, DeliveryToAttempt } from '../delivery-log/types';
import type { PendingDelivery } from '../delivery-log/rows';
import type { Logger } from '../logger';
import { UnsentError } from './http-attempt';
import { OutcomeRecorder } from './outcome-recorder';
import { createBatchWrites } from './batch-writes';
import { createAttemptSender, type AttemptSenderDependencies } from './attempt-send';
import { interruptedRecord, judge, notAttempted, observe } from './attempt-verdicts';
import { batchCancellation, retryOf, timeOf, waitUntil } from './retry-clock';
import { deliveriesAbsent } from '../metrics';
import { receiverStatesOf } from '../webhooks/schedule';
import { deliversInOrder, sendIntervalMs, WEBHOOK_INTEGRATION } from '../installations/webhook';
import { isNoRoom } from '../isolates/isolate-error';
import { trace } from '@opentelemetry/api';
import { linksTo } from '../tracing';
import type { FirstAttemptLag } from './yielding-pace';
import { installationsAsOf } from './installations-as-of';

export interface AttemptBatchInput {
  /** The shard run making the attempts; each record links to it. */
  workflowId: string;
  runId: string;
  /**
   * `trace`: the event's ingest span, which each attempt continues. `notBefore`: a retry's
   * time (ms since 1970) on the clock `clock` of the worker that chose its wait, which
   * the attempt waits for.
   */
  entries: { id: string; attempt: number; trace?: string; notBefore?: number; clock?: string }[];
  /** Made by an ordered installation's line; a shard's batch leaves such an installation's deliveries to its line. */
  line?: true;
  /** Made in a shard's lane of prompt receivers' first attempts: how late they start is what background hand-overs give way to (see YieldingPace). */
  prompt?: true;
}

/**
 * What an ordered line gives its one-delivery batch beside the input (in the process only,
 * never an activity's input): the line reads its next delivery while this one is out, off
 * the path between one answer and the next POST.
 */
export interface LineStep {
  /** This batch's deliveries, read while the attempt ahead of them was out (see AttemptRecords.toAttempt); undefined if that read failed. */
  read?: Promise<Map<string, DeliveryToAttempt> | undefined>;
  /** Called once this batch's attempt is claimed and going out. */
  sending?: () => void;
}

/** What the shard needs back: nothing for a finished delivery, what is left of the wait for one to retry. */
export interface AttemptBatchResult {
  id: string;
  status: DeliveryOutcome['status'];
  statusCode?: number;
  error?: string;
  retryInMs?: number;
  /** When that retry is due (ms since 1970, on the clock of this worker, `clock`): its attempt is made then, not before. */
  retryAt?: number;
  clock?: string;
  /** Not attempted (no room in the isolate pool, the worker stopping): the same attempt is asked for after `retryInMs`. */
  again?: true;
  /** How long after its time (or the batch's read of the log, if later) this run's attempt ended: whether its receiver is prompt (see ShardState). */
  tookMs?: number;
}

export interface AttemptBatchDependencies extends AttemptSenderDependencies {
  attempts: AttemptRecords;
  installations: InstallationIndex;
  logger: Logger;
  /** Told where the receivers that failed deliveries in a write stand (see createAutoPause). */
  afterOutcomes?: (changes: HealthChange[]) => Promise<void>;
  /** Told which installations' receivers answer again after failing (see createHeldRelease). */
  afterRecovery?: (installationIds: string[]) => Promise<void>;
  /**
   * Aborted when the worker begins to stop: attempts in flight have its drain time to end
   * by themselves, and none starts meanwhile (a retry falling due in the drain went out
   * and was cut off at its end, the receiver's answer unread: recorded interrupted).
   */
  draining?: AbortSignal;
  /** Deliveries a shard held for an installation that has since become ordered go to its line (see IngestService.handOverRecorded). */
  handOver?: (deliveries: PendingDelivery[]) => Promise<void>;
  /** Told how long after its record each new event's first attempt starts: background hand-overs give way when that grows (see YieldingPace). */
  firstAttempts?: FirstAttemptLag;
}

/** How long after a delivery to integration code found no room in the isolate pool (having waited 5 s for it) its attempt is tried again. */
const NO_ROOM_RETRY_MS = 2000;

/** How far ahead a throttled attempt takes its send slot and waits for it; past it, the shard waits (durably) and asks again. */
const PACE_HORIZON_MS = 1000;

/**
 * An attempt another workflow's run started this recently may still be going on (its
 * timeout, a busy worker's write): it is asked for again after BUSY_RETRY_MS, not taken
 * for interrupted. Older, its run died.
 */
const ELSEWHERE_IN_FLIGHT_MS = 60_000;
const BUSY_RETRY_MS = 2000;

/** How long an attempt's outcome may wait for others to share its write (see OutcomeRecorder). */
const RECORD_EVERY_MS = 20;

/**
 * Whether a delivery's attempt is a new event's first: not a replay's, nor one released
 * from a hold, whose operations pace them (see YieldingPace). With the prompt lane, no
 * throttle and no wait asked for, how late it starts after its record says how busy the
 * worker is.
 */
const isNew = (delivery: DeliveryToAttempt, attempt: number): boolean => attempt === 1 && delivery.replayOf === undefined && delivery.releasedAt === undefined;

/** How a superseded run ends (see batchCancellation): cancelled, as the SDK reports a cancellation, never with a partial answer. */
const supersededFailure = () => new CancelledFailure('a newer run of this batch makes its attempts');

/**
 * One batch of attempts (DESIGN.md §3), of one installation (or of several whose receivers
 * fail everything, sharing a lane), a webhook's POSTs or an integration's events into its
 * isolate; an ordered line's one delivery at a time. Reads the deliveries and the installation from
 * the log when its attempts are due (so a pause, a new URL or a rotated secret answered
 * before then applies), POSTs concurrently over keep-alive, signs each with a fresh
 * timestamp, and writes the outcomes to the log as they come (see OutcomeRecorder). Run
 * again after a worker died, it returns what was recorded instead of sending again; what
 * was sent but not recorded is sent again (receivers dedupe by eventId).
 */
export function createAttemptBatch(deps: AttemptBatchDependencies) {
  const { attemptUrl, tracedAttempt } = createAttemptSender(deps);
  const { starts, outcomeWrites } = createBatchWrites(deps);

  /**
   * A delivery handed over but not pending is finished (handed over twice), or not in the
   * log at all: the machine lost rows it had committed (SQLite's synchronous=NORMAL keeps
   * them through a crash of the process, not of the machine), or a purge took it. Nothing
   * is attempted; the second case is counted and said, not silent.
   */
  async function reportAbsent(input: AttemptBatchInput, deliveries: Map<string, DeliveryToAttempt>): Promise<void> {
    const missing = input.entries.filter((entry) => !deliveries.has(entry.id)).map((entry) => entry.id);
    const absent = missing.length ? await deps.attempts.absent(missing) : [];
    if (absent.length === 0) return;
    deliveriesAbsent.inc(absent.length);
    deps.logger.warn({ workflowId: input.workflowId, runId: input.runId, absent: absent.length, ids: absent.slice(0, 10) }, 'deliveries handed over are not in the delivery log: nothing to attempt');
  }

  return async function attemptDeliveries(input: AttemptBatchInput, line?: LineStep): Promise<AttemptBatchResult[]> {
    // Every half of the heartbeat timeout (the shard's is 5 s), no more often: each heartbeat
    // the SDK sends is a write of the server. A batch waiting for its retries' time (2 s at
    // most) sends none; one whose receiver hangs for the 10 s attempt timeout sends two.
    const { heartbeatTimeoutMs } = Context.current().info;
    const { stopped, stopping, superseded, either, release } = batchCancellation(Context.current(), deps.draining);
    const heartbeat = heartbeatTimeoutMs ? setInterval(() => Context.current().heartbeat(), heartbeatTimeoutMs / 2) : undefined;
    // The batch carried many events: its span (the activity's) links to each one's.
    trace.getActiveSpan()?.addLinks(linksTo(input.entries.map((entry) => entry.trace)));
    try {
      // A retry batch starts ahead of its retries' time (the shard's lead): the log is read
      // once the first is due, and the installation as of each attempt's time (below).
      await waitUntil(Math.min(...input.entries.map(timeOf)), either);
      // Superseded before it read the log: the newer run has it all (what it started, read here, would be taken for interrupted).
      if (superseded.aborted) throw supersededFailure();
      const deliveries = (await line?.read) ?? (await deps.attempts.toAttempt(input.entries));
      await reportAbsent(input, deliveries);
      const readAt = Date.now();
      /** When each attempt made by this run ended (performance.now()), and how long after its time (see AttemptBatchResult's tookMs). */
      const endedAt = new Map<string, number>();
      const took = new Map<string, number>();
      const installationAsOf = installationsAsOf(deps.installations, input.entries.length > 1);
      /** Deliveries whose attempt this run did not make (no room in the isolate pool, the worker stopping first): the same attempt is asked for after `inMs`. */
      const later: { id: string; inMs: number }[] = [];
      const toLine: DeliveryToAttempt[] = [];
      const run = { workflowId: input.workflowId, runId: input.runId };
      const recorder = new OutcomeRecorder(async (part, lastAt) => {
        await outcomeWrites.submit({ outcomes: part, run });
        observe(part, endedAt, deliveries, lastAt);
      }, RECORD_EVERY_MS);
      const outcomes = await Promise.all(
        input.entries.map(async (entry): Promise<DeliveryOutcome | undefined> => {
          const { id, attempt } = entry;
          const delivery = deliveries.get(id);
          // Finished already (handed over twice), or not in the log (reported above): nothing to do.
          if (!delivery) return undefined;
          // Recorded by an earlier run of the batch (written and counted then): its outcome again.
          if (delivery.recorded) return judge(id, delivery.recorded, delivery.interruptedBefore);
          // Being made by another workflow's run (an ordered line and the shard it took over from): its answer is waited for.
          if (delivery.interrupted && delivery.interrupted.workflowId !== input.workflowId && Date.now() - Date.parse(delivery.interrupted.startedAt) < ELSEWHERE_IN_FLIGHT_MS) return void later.push({ id, inMs: BUSY_RETRY_MS });
          // Started by an earlier run that died before its answer was recorded: not sent again.
          if (delivery.interrupted) {
            const outcome = judge(id, interruptedRecord(delivery.interrupted), delivery.interruptedBefore);
            recorder.add(outcome);
            return outcome;
          }
          await waitUntil(timeOf(entry), either);
          // A newer run of the batch makes this attempt (see batchCancellation); this run's answer is nobody's.
          if (superseded.aborted) return undefined;
          if (stopping.aborted) return void later.push({ id, inMs: Math.max(0, timeOf(entry) - Date.now()) });
          const target = await installationAsOf(delivery.installationId, timeOf(entry));
          // Ordered since the shard got it: its line attempts it (the shard forgets it).
          if (!input.line && target && deliversInOrder(target)) return void toLine.push(delivery);
          let outcome = notAttempted(delivery, attempt, target);
          const interval = !outcome && target!.integration === WEBHOOK_INTEGRATION ? sendIntervalMs(target!.configuration) : undefined;
          if (interval !== undefined && deps.pace) {
            // Throttled: its send slot, or the shard asks again once one is near (no attempt spent).
            const slot = await deps.pace.reserve(target!.id, interval, PACE_HORIZON_MS);
            if ('laterMs' in slot) return void later.push({ id, inMs: slot.laterMs });
            await waitUntil(slot.sendAt, either);
            if (superseded.aborted) return undefined;
            if (stopping.aborted) return void later.push({ id, inMs: 0 });
            // A 429 that came while it waited holds it too.
            const held = (await deps.pace.heldUntil(target!.id)) - Date.now();
            if (held > 0) return void later.push({ id, inMs: held });
          }
          if (!outcome) {
            const started = { deliveryId: id, attempt, startedAt: new Date().toISOString(), url: attemptUrl(target!) };
            // Claimed by another run meanwhile (its attempt, whose answer is waited for), or made and recorded since the read: asked again, read afresh.
            if (!(await starts.submit({ started, run: input }))) return void later.push({ id, inMs: BUSY_RETRY_MS });
            if (input.prompt && interval === undefined && entry.notBefore === undefined && isNew(delivery, attempt)) deps.firstAttempts?.note(Date.now() - delivery.createdAt);
            line?.sending?.();
            outcome = await tracedAttempt(delivery, entry, target!, stopped).catch(async (err: unknown) => {
              if (!isNoRoom(err) && !(err instanceof UnsentError)) throw err;
              // No attempt was made: the same one is made later, not taken for interrupted.
              await deps.attempts.forgetStarted([started]);
              later.push({ id, inMs: err instanceof UnsentError ? Math.max(0, timeOf(entry) - Date.now()) : NO_ROOM_RETRY_MS });
              return undefined;
            });
          }
          if (!outcome) return undefined;
          if (outcome.attempt) {
            endedAt.set(id, performance.now());
            took.set(id, Date.now() - Math.max(readAt, timeOf(entry)));
          }
          recorder.add(outcome);
          return outcome;
        }),
      ).catch(async (err: unknown) => {
        // The batch fails and runs again: what its other attempts end with is not written after it.
        await recorder.abort();
        throw err;
      });
      const written = outcomes.filter((outcome): outcome is DeliveryOutcome => outcome !== undefined);
      await recorder.close();
      // Where its receivers stand, for shards of later epochs (see ShardItem's `failing`): a hint, its write never fails the batch.
      const answers = written.filter((outcome) => outcome.attempt && endedAt.has(outcome.id)).map((outcome) => ({ installationId: deliveries.get(outcome.id)!.installationId, statusCode: outcome.attempt!.statusCode, error: outcome.attempt!.error, tookMs: took.get(outcome.id) }));
      const recovered = answers.length ? await deps.attempts.noteReceivers(receiverStatesOf(answers)).catch((err: Error) => (deps.logger.warn({ err: err.message }, 'receivers’ failing state not written; the next batch writes it'), [])) : [];
      // What they held goes out now, not at the stranded sweep's minute; a miss is the sweep's.
      if (recovered.length) await deps.afterRecovery?.(recovered).catch((err: Error) => deps.logger.warn({ err: err.message, installations: recovered }, 'held deliveries of receivers answering again not released; the stranded sweep will'));
      // Not handed to the line, they are still pending in the log: the stranded sweep hands them over again.
      if (toLine.length) await deps.handOver?.(toLine).catch((err: Error) => deps.logger.warn({ err: err.message, deliveries: toLine.length }, 'deliveries of an ordered installation not handed to its line; the stranded sweep will'));
      // What it left to the newer run is not in its answer, which the shard would take as finished: it fails, cancelled, instead.
      if (superseded.aborted) throw supersededFailure();
      deps.logger.debug({ workflowId: input.workflowId, deliveries: written.length, later: later.length }, 'attempt batch');
      return [
        ...written.map((outcome) => ({
          id: outcome.id,
          status: outcome.status,
          ...(outcome.attempt?.statusCode !== undefined && { statusCode: outcome.attempt.statusCode }),
          ...(outcome.attempt?.error !== undefined && { error: outcome.attempt.error }),
          ...(outcome.status === 'pending' && retryOf(outcome.attempt!.nextDelayMs!, endedAt.get(outcome.id))),
          ...(took.has(outcome.id) && { tookMs: took.get(outcome.id) }),
        })),
        // Delayed, none of their attempts spent, none failed.
        ...later.map(({ id, inMs }) => ({ id, status: 'pending' as const, again: true as const, ...retryOf(inMs, performance.now()) })),
      ];
    } finally {
      clearInterval(heartbeat);
      release();
    }
  };
}
