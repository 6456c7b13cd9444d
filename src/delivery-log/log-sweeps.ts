import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Schema } from './schema';
import { chunks, inLineOrder, PENDING_COLUMNS, pendingDelivery, type PendingDelivery } from './rows';
import type { PageCursor } from './types';
import { isFailing } from '../webhooks/schedule';

/** The worker's sweeps of the log: deliveries a shard may have lost, and what is past retention. */
export class LogSweeps {
  constructor(private readonly db: Kysely<Schema>) {}

  /**
   * Up to `limit` pending deliveries never attempted and recorded before `before`, oldest
   * first from the cursor `after`: those whose hand-over to a shard may never have landed
   * (one range of the pending-age index).
   */
  stranded(before: number, limit: number, after?: PageCursor): Promise<PendingDelivery[]> {
    return this.pendingRecordedBefore('never attempted', before, limit, after);
  }

  /**
   * Up to `limit` pending deliveries attempted at least once and recorded before `before`,
   * oldest first: retries whose shard run ended without them (terminated, say), which no
   * run would attempt again. Few: the pending-age index's retrying range, sorted.
   */
  overdueRetries(before: number, limit: number): Promise<PendingDelivery[]> {
    return this.pendingRecordedBefore('attempted', before, limit);
  }

  /**
   * Installations not paused that have deliveries held since before `before`, and no
   * release of theirs running, up to `limit`: those held while their receiver failed
   * (RECEIVER_FAILING), and those a resume's release missed (an ingest flush that read
   * the installation paused and committed after the release looked). Each with when its
   * oldest was recorded and whether its receiver is failing now (a deleted one's never is).
   * `among`: of these installations only.
   */
  async heldOfActive(before: number, limit: number, among?: string[]): Promise<{ installationId: string; organizationId: string; oldest: number; failing: boolean }[]> {
    if (among?.length === 0) return [];
    const rows = await this.db
      .selectFrom('deliveries')
      .innerJoin('installations', 'installations.id', 'deliveries.installation_id')
      .leftJoin('installation_health', 'installation_health.installation_id', 'deliveries.installation_id')
      .select(['deliveries.installation_id', 'deliveries.organization_id', 'installations.status', 'installation_health.failing_now', (eb) => eb.fn.min<number>('deliveries.created_at').as('oldest')])
      .where('deliveries.status', '=', 'held')
      .$if(among !== undefined, (q) => q.where('deliveries.installation_id', 'in', among!))
      .where('installations.status', '!=', 'paused')
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('operations').select('operations.id').whereRef('operations.installation_id', '=', 'deliveries.installation_id').where('operations.kind', '=', 'release_held').where('operations.status', '=', 'running'))))
      .groupBy(['deliveries.installation_id', 'deliveries.organization_id', 'installations.status', 'installation_health.failing_now'])
      .having((eb) => eb.fn.min('deliveries.created_at'), '<', before)
      .limit(limit)
      .execute();
    // Failing counts for an active installation only: a deleted one's held deliveries go at once (each ends skipped).
    return rows.map((row) => ({ installationId: row.installation_id, organizationId: row.organization_id, oldest: Number(row.oldest), failing: row.status === 'active' && isFailing(row.failing_now) }));
  }

  /** An installation's oldest held delivery, pending again (one try of a receiver still failing); none if nothing is held. */
  async releaseOldestHeld(installationId: string, now = Date.now()): Promise<PendingDelivery | undefined> {
    const oldest = await this.db.selectFrom('deliveries').select('id').where('installation_id', '=', installationId).where('status', '=', 'held').$call(inLineOrder).limit(1).executeTakeFirst();
    if (!oldest) return undefined;
    const released = await this.db.updateTable('deliveries').set({ status: 'pending', updated_at: now }).where('id', '=', oldest.id).where('status', '=', 'held').returning([...PENDING_COLUMNS]).executeTakeFirst();
    return released && pendingDelivery(released);
  }

  private async pendingRecordedBefore(which: 'never attempted' | 'attempted', before: number, limit: number, after?: PageCursor): Promise<PendingDelivery[]> {
    const rows = await this.db
      .selectFrom('deliveries')
      .select(PENDING_COLUMNS)
      .where('status', '=', 'pending')
      .where('attempts', which === 'attempted' ? '>' : '=', 0)
      .where('created_at', '<', before)
      // A row comparison: both databases read it as a range of the index, not a filter.
      .$if(after !== undefined, (q) => q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(after!.createdAt, after!.id))))
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(pendingDelivery);
  }

  /**
   * Deletes what is older than `before`, at most `limit` rows of each table a step (a
   * delivery with its attempts), so that no transaction holds the writer long; answers how
   * many rows went, 0 once nothing is left. A delivery goes once it is final: one still
   * pending was accepted and is the engine's to finish (a worker away longer than the
   * retention). An event's record, which keeps its eventId taken, goes only once none of
   * its deliveries, replays included, is left: while one is listed, a repeat of the event
   * answers its first answer, and a new one cannot meet its old rows.
   */
  async purge(before: number, limit = 5000): Promise<number> {
    const noDeliveryLeft = ({ not, exists, selectFrom }: ExpressionBuilder<Schema, 'events'>) => not(exists(selectFrom('deliveries').select('deliveries.id').whereRef('deliveries.event_id', '=', 'events.event_id')));
    const [deliveries, events, states] = await Promise.all([
      this.db.selectFrom('deliveries').select('id').where('created_at', '<', before).where('status', '!=', 'pending').limit(limit).execute(),
      this.db
        .selectFrom('events')
        .select('event_id')
        .where('created_at', '<', before)
        .where(noDeliveryLeft)
        .limit(limit)
        .execute(),
      this.db.selectFrom('oauth_states').select('nonce').where('used_at', '<', before).limit(limit).execute(),
    ]);
    // Operations finished before it, and what is kept per installation (its receiver's health, its send slots, its line's counter) once it is deleted.
    const operations = await this.db.selectFrom('operations').select('id').where('finished_at', '<', before).limit(limit).execute();
    const deleted = (eb: ExpressionBuilder<Schema, 'installation_health' | 'installation_pace' | 'installation_lines'>) => eb('installation_id', 'in', eb.selectFrom('installations').select('id').where('status', '=', 'deleted'));
    const [health, pace, lines] = await Promise.all(
      (['installation_health', 'installation_pace', 'installation_lines'] as const).map((table) => this.db.selectFrom(table).select('installation_id').where(deleted).limit(limit).execute()),
    );
    await this.db.transaction().execute(async (trx) => {
      for (const part of chunks(deliveries.map((row) => row.id))) {
        await trx.deleteFrom('attempts').where('delivery_id', 'in', part).execute();
        await trx.deleteFrom('attempts_in_flight').where('delivery_id', 'in', part).execute();
        await trx.deleteFrom('deliveries').where('id', 'in', part).execute();
      }
      // Again here: a replay recorded since the select keeps its event's record.
      for (const part of chunks(events.map((row) => row.event_id))) await trx.deleteFrom('events').where('event_id', 'in', part).where(noDeliveryLeft).execute();
      for (const part of chunks(states.map((row) => row.nonce))) await trx.deleteFrom('oauth_states').where('nonce', 'in', part).execute();
      for (const part of chunks(operations.map((row) => row.id))) await trx.deleteFrom('operations').where('id', 'in', part).execute();
      for (const part of chunks(health.map((row) => row.installation_id))) await trx.deleteFrom('installation_health').where('installation_id', 'in', part).execute();
      for (const part of chunks(pace.map((row) => row.installation_id))) await trx.deleteFrom('installation_pace').where('installation_id', 'in', part).execute();
      for (const part of chunks(lines.map((row) => row.installation_id))) await trx.deleteFrom('installation_lines').where('installation_id', 'in', part).execute();
      // Console sessions long expired (an expired one is refused whatever its row).
      await trx.deleteFrom('console_sessions').where('expires_at', '<', before).execute();
    });
    return deliveries.length + events.length + states.length + operations.length + health.length + pace.length + lines.length;
  }
}
