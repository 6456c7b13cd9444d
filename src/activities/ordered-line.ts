import { Context } from '@temporalio/activity';
import type { AttemptRecords } from '../delivery-log/attempt-records';
import type { InstallationIndex } from '../installations/read-model';
import { deliversInOrder } from '../installations/webhook';
import type { PendingDelivery } from '../delivery-log/rows';
import type { AttemptBatchInput, AttemptBatchResult, LineStep } from './attempt-batch';

/** Pending deliveries read from the log at a time. */
const PAGE = 100;
/** How often a line whose next deliveries wait behind held ones asks again (a resume's operation releases a page each 500 ms). */
const HELD_WAIT_MS = 500;
/** A wait between retries heartbeats this often (the line's heartbeat timeout is 10 s). */
const HEARTBEAT_MS = 2000;
/**
 * Between deliveries the line heartbeats this often at most: each heartbeat is a call into
 * the SDK's core (a CPU profile of bench (p): one a delivery was 0.35 ms of the ~8 ms each took).
 */
const BETWEEN_DELIVERIES_HEARTBEAT_MS = 1000;

/**
 * Heartbeats and waits `ms` (heartbeating on), at least a millisecond: a cancelled activity
 * (its worker stopping, the server timing it out) stops here and fails cancelled, instead
 * of going round its loop for ever.
 */
async function waitHeartbeating(ms: number): Promise<void> {
  const context = Context.current();
  let left = Math.max(1, ms);
  do {
    context.heartbeat();
    await context.sleep(Math.min(left, HEARTBEAT_MS));
    left -= HEARTBEAT_MS;
  } while (left > 0);
}

/**
 * An ordered installation's line (see orderedLineWorkflow): its pending deliveries, oldest
 * first, each attempted through the attempt batch (one delivery a batch: the same reads,
 * pause and throttle, records and health) until it is final, its retries waited for here,
 * before the next is sent. A failure does not stop the line; a replay, recorded later, is
 * at its back; nothing recorded after a held delivery goes before it is released. Answers
 * `gone` once the installation is deleted, or no longer ordered (what is pending then is
 * handed to the shards).
 */
export function createLineDrain(deps: { attempts: AttemptRecords; installations: InstallationIndex; ingest: { handOverRecorded(deliveries: PendingDelivery[]): Promise<void> } }, attemptBatch: (input: AttemptBatchInput, line?: LineStep) => Promise<AttemptBatchResult[]>) {
  /** Hands what is pending to the shards, page by page: the installation is no longer a line. */
  async function leaveLine(installationId: string): Promise<void> {
    for (let page = await deps.attempts.pendingInOrder(installationId, PAGE); page.length; page = await deps.attempts.pendingInOrder(installationId, PAGE, page.at(-1))) {
      await deps.ingest.handOverRecorded(page);
    }
  }

  return async function drainLine(installationId: string): Promise<'drained' | 'gone'> {
    // The line's run, which each attempt's record links to.
    const { workflowId = '', runId = '' } = Context.current().info.workflowExecution ?? {};
    let heartbeatAt = performance.now();
    for (;;) {
      const target = await deps.installations.get(installationId);
      // Deleted, or no longer ordered: its shards end what is pending (skipped, failed, or attempted).
      if (!target || target.status === 'deleted' || !deliversInOrder(target)) return leaveLine(installationId).then(() => 'gone' as const);
      // Active only: while paused, what is pending ends failed (installation_paused), as before, instead of waiting out the pause.
      const held = target.status === 'active' ? await deps.attempts.oldestHeld(installationId) : undefined;
      const pending = await deps.attempts.pendingInOrder(installationId, PAGE, undefined, held);
      if (pending.length === 0) {
        // Recorded after what is held (events since a resume): they wait for its release (the
        // resume's operation, or the held sweep's once a minute for what no operation took).
        if (held && (await deps.attempts.pendingInOrder(installationId, 1)).length) {
          await waitHeartbeating(HELD_WAIT_MS);
          continue;
        }
        return 'drained';
      }
      /** The delivery next in line, read while the one ahead of it was out. */
      let ahead: LineStep['read'];
      for (const [i, delivery] of pending.entries()) {
        const next = pending[i + 1];
        for (let attempt = delivery.attempts + 1; ; ) {
          let readNext: LineStep['read'];
          // After the POST is written (the socket's write waits for the next tick): the read
          // runs while the receiver answers. A delivery another run attempts meanwhile has
          // this line's claim refused, and is read afresh; a pause is read at its attempt.
          const sending = next && (() => void setImmediate(() => (readNext = deps.attempts.toAttempt([{ id: next.id, attempt: next.attempts + 1 }]).catch(() => undefined))));
          const [result] = await attemptBatch({ workflowId, runId, line: true, entries: [{ id: delivery.id, attempt }] }, { read: ahead, sending });
          ahead = undefined;
          // Final, or finished by someone else (absent from the answer).
          if (!result || result.status !== 'pending') {
            ahead = readNext;
            break;
          }
          if (!result.again) attempt += 1;
          await waitHeartbeating(result.retryInMs ?? 0);
        }
        // Between deliveries too: a line whose receiver answers at once sends for long without a retry's wait.
        if (performance.now() - heartbeatAt >= BETWEEN_DELIVERIES_HEARTBEAT_MS) {
          Context.current().heartbeat();
          heartbeatAt = performance.now();
        }
      }
    }
  };
}
