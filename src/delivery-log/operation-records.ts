import { sql, type Kysely, type Selectable } from 'kysely';
import type { Operation, OperationRequest } from './types';
import type { OperationsTable, Schema } from './schema';
import { inLineOrder, PENDING_COLUMNS, pendingDelivery, type PendingDelivery } from './rows';

/** Background operations' progress, and the held deliveries a release takes. */
export class OperationRecords {
  constructor(private readonly db: Kysely<Schema>) {}

  /**
   * Records the operation with what it will handle; a second call (its activity retried)
   * keeps the first. One that ended without finishing (failed, cancelled) and is started
   * again under its id (a held sweep's release: its id names the time of the oldest
   * delivery held) is recorded afresh. Answers when it began (ms since 1970).
   */
  async begin(request: OperationRequest, total: number, now = Date.now()): Promise<number> {
    const { held, since, until } = request;
    const fresh = { status: 'running', total, done: 0, failed: 0, request: JSON.stringify({ held, since, until }), created_at: now, updated_at: now, finished_at: null };
    await this.db
      .insertInto('operations')
      .values({ id: request.id, kind: request.kind, organization_id: request.organizationId, installation_id: request.installationId, ...fresh })
      .onConflict((oc) => oc.column('id').doUpdateSet(fresh).where('operations.status', 'in', ['failed', 'cancelled']))
      .execute();
    const row = await this.db.selectFrom('operations').select('created_at').where('id', '=', request.id).executeTakeFirstOrThrow();
    return Number(row.created_at);
  }

  /** Counts a page in, in the transaction of what it did (`db`): counted exactly once, whatever is run again. */
  async advance(id: string, done: number, failed: number, db: Kysely<Schema> = this.db, now = Date.now()): Promise<void> {
    await db
      .updateTable('operations')
      .set({ done: sql<number>`done + ${done}`, failed: sql<number>`failed + ${failed}`, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  /** Answers whether it was running (only a running operation is finished; with `begunAt`, only the record begun then). */
  async finish(id: string, status: Exclude<Operation['status'], 'running'>, now = Date.now(), begunAt?: number): Promise<boolean> {
    const result = await this.db
      .updateTable('operations')
      .set({ status, updated_at: now, finished_at: now })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .$if(begunAt !== undefined, (q) => q.where('created_at', '=', begunAt!))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Operations recorded running, oldest first. */
  async running(limit: number): Promise<(Pick<Operation, 'id' | 'kind' | 'installationId'> & { createdAt: number })[]> {
    const rows = await this.db.selectFrom('operations').select(['id', 'kind', 'installation_id', 'created_at']).where('status', '=', 'running').orderBy('created_at').limit(limit).execute();
    return rows.map((row) => ({ id: row.id, kind: row.kind as Operation['kind'], installationId: row.installation_id, createdAt: Number(row.created_at) }));
  }

  async get(id: string): Promise<(Operation & { organizationId: string }) | undefined> {
    const row = await this.db.selectFrom('operations').selectAll().where('id', '=', id).executeTakeFirst();
    return row && operationOf(row);
  }

  /** Deliveries held for the installation. */
  async countHeld(installationId: string, heldUntil = Infinity): Promise<number> {
    const row = await this.db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('installation_id', '=', installationId)
      .where('status', '=', 'held')
      .$if(Number.isFinite(heldUntil), (q) => q.where('created_at', '<=', heldUntil))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * The installation's first `limit` held deliveries in order of ingest, released: pending
   * again (answered, to be handed to their shards in that order) or dropped (`skipped`,
   * reason held_dropped), counted into the operation in the same transaction. Only rows
   * still held change, so a page run again releases nothing twice.
   */
  async releaseHeld(operationId: string, installationId: string, mode: 'deliver' | 'drop', limit: number, heldUntil = Infinity, now = Date.now()): Promise<PendingDelivery[]> {
    return this.db.transaction().execute(async (trx) => {
      const held = await trx
        .selectFrom('deliveries')
        .select('id')
        .where('installation_id', '=', installationId)
        .where('status', '=', 'held')
        .$if(Number.isFinite(heldUntil), (q) => q.where('created_at', '<=', heldUntil))
        .$call(inLineOrder)
        .limit(limit)
        .execute();
      if (held.length === 0) return [];
      const change = mode === 'deliver' ? { status: 'pending', updated_at: now } : { status: 'skipped', reason: 'held_dropped', updated_at: now, completed_at: now };
      const released = await trx
        .updateTable('deliveries')
        .set(change)
        .where('id', 'in', held.map((row) => row.id))
        .where('status', '=', 'held')
        .returning([...PENDING_COLUMNS])
        .execute();
      await this.advance(operationId, released.length, 0, trx, now);
      // In the order they were held (the update's RETURNING has none).
      const order = new Map(held.map((row, i) => [row.id, i]));
      return released.map(pendingDelivery).sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    });
  }

  /** Events with failed deliveries of the installation in the range: what a bulk replay will replay (once per event). */
  async countFailedEvents(installationId: string, since?: number, until?: number): Promise<number> {
    const row = await this.db
      .selectFrom('deliveries')
      .select(sql<number>`count(distinct event_id)`.as('n'))
      .where('installation_id', '=', installationId)
      .where('status', '=', 'failed')
      .$if(since !== undefined, (q) => q.where('created_at', '>=', since!))
      .$if(until !== undefined, (q) => q.where('created_at', '<=', until!))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Of these events, those the operation (begun at `since`) replayed already for the installation: a page run again replays nothing twice. */
  async replayedSince(installationId: string, eventIds: string[], since: number): Promise<Set<string>> {
    if (eventIds.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('deliveries')
      .select('event_id')
      .where('installation_id', '=', installationId)
      .where('event_id', 'in', eventIds)
      .where('replay_of', 'is not', null)
      .where('created_at', '>=', since)
      .execute();
    return new Set(rows.map((row) => row.event_id));
  }
}

function operationOf(row: Selectable<OperationsTable>): Operation & { organizationId: string } {
  const time = (ms: number) => new Date(Number(ms)).toISOString();
  return {
    id: row.id,
    kind: row.kind as Operation['kind'],
    organizationId: row.organization_id,
    installationId: row.installation_id,
    status: row.status as Operation['status'],
    total: row.total,
    done: row.done,
    failed: row.failed,
    left: Math.max(0, row.total - row.done - row.failed),
    request: JSON.parse(row.request) as Operation['request'],
    createdAt: time(row.created_at),
    updatedAt: time(row.updated_at),
    ...(row.finished_at !== null && { finishedAt: time(row.finished_at) }),
  };
}
