import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema';
import type { DeliveryOutcome } from './types';
import { isFailing, type ReceiverState } from '../webhooks/schedule';

/** An installation whose receiver failed deliveries in a write: where its failures in a row stand after it. */
export interface HealthChange {
  installationId: string;
  consecutiveFailures: number;
  /** When the first of them was recorded (ms since 1970): a replay of what failed since starts there. */
  failingSince: number;
  /** A delivery of the write failed on 410 Gone. */
  gone: boolean;
}

/** How long a process trusts what it last wrote of a receiver's `failing_now` (another process may have written since). */
const FAILING_NOW_TRUSTED_MS = 60_000;

/** How often, at most, a receiver that keeps answering has its last success written. */
const SUCCESS_EVERY_MS = 1000;

/** A delivery the receiver's answers finished: delivered, or failed with an attempt (not failed by a pause or a deletion). */
const judgedByReceiver = (outcome: DeliveryOutcome) => outcome.status === 'delivered' || (outcome.status === 'failed' && outcome.attempt !== undefined);

/**
 * Counts finished deliveries into their installations' health, once the transaction that
 * records them has committed (not in it: a busy installation's writes would queue on its
 * one row); `finished` are those that write finished (a batch run again finishes nothing
 * twice), in the order they ended. Answers where the installations with failures in this
 * write stand. A crash between the two loses a few counts, no outcome. The installations'
 * rows are written in one transaction: a write of a shared lane's batches touches up to
 * a hundred, and a commit each was most of the log's commits beside failing receivers.
 */
export async function recordHealth(db: Kysely<Schema>, known: Set<string>, finished: { installationId: string; createdAt: number; outcome: DeliveryOutcome }[], now: number): Promise<HealthChange[]> {
  if (!finished.some(({ outcome }) => judgedByReceiver(outcome))) return [];
  const inserted: string[] = [];
  // Deliveries alone (the common case) need no transaction: each statement stands alone (an
  // insert of a missing row, an update that rarely matches), and a transaction's begin and
  // commit a write are time an ordered line waits (bench p: 111-118/s with, 121/s without).
  const failed = finished.some(({ outcome }) => judgedByReceiver(outcome) && outcome.status !== 'delivered');
  const changes = failed ? await db.transaction().execute((trx) => writeHealth(trx, known, inserted, finished, now)) : await writeHealth(db, known, inserted, finished, now);
  // Known once committed: a transaction rolled back leaves the row to insert next time.
  for (const installationId of inserted) known.add(installationId);
  return changes;
}

async function writeHealth(db: Kysely<Schema>, known: Set<string>, inserted: string[], finished: { installationId: string; createdAt: number; outcome: DeliveryOutcome }[], now: number): Promise<HealthChange[]> {
  const byInstallation = new Map<string, { createdAt: number; outcome: DeliveryOutcome }[]>();
  for (const { installationId, createdAt, outcome } of finished) {
    if (judgedByReceiver(outcome)) byInstallation.set(installationId, [...(byInstallation.get(installationId) ?? []), { createdAt, outcome }]);
  }
  const changes: HealthChange[] = [];
  // In one order in every transaction: two writes of shared-lane batches must not lock two installations' rows crosswise (PostgreSQL's deadlock).
  for (const [installationId, outcomes] of [...byInstallation].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    // Only the failures after the write's last success continue (or start) the run.
    const lastSuccess = outcomes.map(({ outcome }) => outcome.status).lastIndexOf('delivered');
    const failures = outcomes.slice(lastSuccess + 1);
    const last = failures.at(-1)?.outcome.attempt;
    const firstFailedAt = failures.length ? Math.min(...failures.map((failure) => failure.createdAt)) : null;
    const reset = lastSuccess >= 0;
    if (failures.length === 0) {
      // Delivered alone, the common case: the row changes only if it was failing, or a second on (its last success), so that writes of a busy installation do not queue on it.
      // One statement: the row is inserted once (rows are never deleted, `known` remembers them).
      if (!known.has(installationId)) {
        await db.insertInto('installation_health').values({ installation_id: installationId, consecutive_failures: 0, failing_since: null, last_success_at: now, last_failure_at: null, last_failure_status: null, last_failure_error: null }).onConflict((oc) => oc.column('installation_id').doNothing()).execute();
        inserted.push(installationId);
      }
      await db
        .updateTable('installation_health')
        .set({ consecutive_failures: 0, failing_since: null, last_success_at: now })
        .where('installation_id', '=', installationId)
        .where((eb) => eb.or([eb('consecutive_failures', '>', 0), eb('last_success_at', 'is', null), eb('last_success_at', '<', now - SUCCESS_EVERY_MS)]))
        .execute();
      continue;
    }
    const row = await db
      .insertInto('installation_health')
      .values({
        installation_id: installationId,
        consecutive_failures: failures.length,
        failing_since: firstFailedAt,
        last_success_at: reset ? now : null,
        last_failure_at: last ? now : null,
        last_failure_status: last?.statusCode ?? null,
        last_failure_error: last?.error ?? null,
      })
      .onConflict((oc) =>
        oc.column('installation_id').doUpdateSet((eb) => ({
          consecutive_failures: reset ? eb.ref('excluded.consecutive_failures') : sql<number>`installation_health.consecutive_failures + excluded.consecutive_failures`,
          // The earliest: writes of one installation's batches may commit out of the order their deliveries were recorded in.
          failing_since: reset ? eb.ref('excluded.failing_since') : sql<number | null>`case when installation_health.failing_since is null or excluded.failing_since < installation_health.failing_since then excluded.failing_since else installation_health.failing_since end`,
          ...(reset && { last_success_at: eb.ref('excluded.last_success_at') }),
          ...(last && { last_failure_at: eb.ref('excluded.last_failure_at'), last_failure_status: eb.ref('excluded.last_failure_status'), last_failure_error: eb.ref('excluded.last_failure_error') }),
        })),
      )
      .returning(['consecutive_failures', 'failing_since'])
      .executeTakeFirstOrThrow();
    changes.push({ installationId, consecutiveFailures: row.consecutive_failures, failingSince: Number(row.failing_since), gone: failures.some(({ outcome }) => outcome.attempt?.statusCode === 410) });
  }
  return changes;
}

/**
 * Where receivers stand after an attempt batch (a ReceiverState: how each installation's
 * receiver failed all the attempts the batch made, or that it answered them promptly, or
 * null), with when it was written (what API processes read, see ReceiverStates). Only changes
 * are written (`written`: what this process wrote, trusted for a minute), so receivers
 * that keep failing, or keep answering, cost nothing; all in one transaction, in one order.
 * Answers the installations whose receivers were failing (whoever wrote it) and answer now.
 */
export async function recordReceiverStates(db: Kysely<Schema>, written: Map<string, { state: ReceiverState; at: number }>, states: Map<string, ReceiverState>, now: number): Promise<string[]> {
  const changed = [...states].filter(([installationId, state]) => {
    const last = written.get(installationId);
    return !last || last.state !== state || now - last.at > FAILING_NOW_TRUSTED_MS;
  });
  if (changed.length === 0) return [];
  changed.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const recovered = await db.transaction().execute(async (trx) => {
    const cleared: string[] = [];
    for (const [installationId, state] of changed) {
      const from = isFailing(state) ? now : null;
      if (from === null) {
        // Answering after failing: cleared by a write that says so (no read before it, which
        // SQLite may refuse to upgrade, and processes reading together would each see); of
        // processes writing one receiver's answers together, the one that clears it sees it.
        const wasFailing = await trx.updateTable('installation_health').set({ failing_now: state, failing_now_at: now, failing_now_from: null }).where('installation_id', '=', installationId).where('failing_now_from', 'is not', null).returning('installation_id').executeTakeFirst();
        if (wasFailing) {
          cleared.push(installationId);
          continue;
        }
      }
      await trx
        .insertInto('installation_health')
        .values({ installation_id: installationId, consecutive_failures: 0, failing_now: state, failing_now_at: now, failing_now_from: from })
        // Failing on from failing (slow or fast), it keeps when it began: what holds its new events is how long.
        .onConflict((oc) => oc.column('installation_id').doUpdateSet({ failing_now: state, failing_now_at: now, failing_now_from: from === null ? null : sql<number>`coalesce(installation_health.failing_now_from, ${from})` }))
        .execute();
    }
    return cleared;
  });
  // A process's memory of installations, bounded: forgetting only costs a write.
  if (written.size > 10_000) written.clear();
  for (const [installationId, state] of changed) written.set(installationId, { state, at: now });
  return recovered;
}
