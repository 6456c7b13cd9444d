import type { Kysely, Transaction } from 'kysely';
import type { Encryption } from '../encryption';
import { deliveryId } from '../ids';
import type { Schema } from './schema';
import { chunks, PENDING_COLUMNS, pendingDelivery, type PendingDelivery } from './rows';
import type { DeliverySummary, EventRecord, NewDelivery, NewEvent } from './types';

let lastRecordedAt = 0;
/**
 * When a delivery is recorded (ms since 1970), later than the last this process took: an
 * ordered line sends in the order recorded, by this time first, and two of a process's
 * recordings in one millisecond would have tied, their deliveries then sent by id. It runs
 * ahead of the clock only while a process records more than 1,000 times a second, and
 * catches up by itself.
 */
export function recordingTime(): number {
  lastRecordedAt = Math.max(Date.now(), lastRecordedAt + 1);
  return lastRecordedAt;
}

/**
 * The log's writes of what was accepted (DESIGN.md §2): events with their planned
 * deliveries (ingest), replays (the API), and what is still pending of events recorded
 * before (a repeated ingest hands it over again). Payload bodies are sealed at rest.
 */
export class EventRecords {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly encryption: Encryption,
  ) {}

  /**
   * Records events with their planned deliveries. The events table's key decides races: an
   * eventId recorded before keeps its first answer, and nothing of this call is added to it.
   */
  async recordEvents(events: NewEvent[], now = recordingTime()): Promise<Map<string, EventRecord>> {
    const records = new Map<string, EventRecord>();
    await this.db.transaction().execute(async (trx) => {
      const fresh = new Set<string>();
      for (const part of chunks(events)) {
        const inserted = await trx
          .insertInto('events')
          .values(part.map((event) => ({ event_id: event.eventId, organization_id: event.organizationId, event_type: event.eventType, delivery_ids: JSON.stringify(event.deliveries.map((d) => d.id)), created_at: now })))
          .onConflict((oc) => oc.column('event_id').doNothing())
          .returning('event_id')
          .execute();
        for (const row of inserted) fresh.add(row.event_id);
      }
      const deliveries = events.filter((event) => fresh.has(event.eventId)).flatMap((event) => event.deliveries);
      // `seq`: their order in the flush (a batch's order), which an ordered line keeps among those of one millisecond.
      const seq = new Map(deliveries.map((delivery, i) => [delivery.id, i]));
      for (const part of chunks(deliveries)) {
        await trx
          .insertInto('deliveries')
          .values(part.map((delivery) => ({ ...this.deliveryRow(delivery, now), seq: seq.get(delivery.id)! })))
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      }
      for (const event of events) if (fresh.has(event.eventId)) records.set(event.eventId, { eventId: event.eventId, organizationId: event.organizationId, eventType: event.eventType, deliveryIds: event.deliveries.map((d) => d.id), fresh: true });
      const earlier = events.filter((event) => !fresh.has(event.eventId)).map((event) => event.eventId);
      for (const part of chunks(earlier)) {
        const rows = await trx.selectFrom('events').select(['event_id', 'organization_id', 'event_type', 'delivery_ids']).where('event_id', 'in', part).execute();
        for (const row of rows) records.set(row.event_id, { eventId: row.event_id, organizationId: row.organization_id, eventType: row.event_type, deliveryIds: JSON.parse(row.delivery_ids) as string[], fresh: false });
      }
    });
    return records;
  }

  /**
   * A replay of each original, recorded now, in one transaction with `withThem` (an
   * operation's progress): what to hand to the shards. Each is a new delivery with the body
   * of the one it replays, under the next free `<eventId>:<installationId>:replay-<n>`
   * (found in one read of the event's deliveries; a concurrent replay taking it moves to the
   * next). None for an original no longer in the log (purged since it was read).
   */
  async recordReplays(originals: Pick<DeliverySummary, 'id' | 'eventId' | 'installationId' | 'organizationId' | 'eventType' | 'url'>[], now = recordingTime(), withThem?: (trx: Transaction<Schema>, replays: PendingDelivery[]) => Promise<void>): Promise<PendingDelivery[]> {
    return this.db.transaction().execute(async (trx) => {
      const replays: PendingDelivery[] = [];
      for (const part of chunks(originals)) {
        // One read of the bodies and one of the events' deliveries for the whole part, one insert.
        const bodies = new Map((await trx.selectFrom('deliveries').select(['id', 'body']).where('id', 'in', part.map((original) => original.id)).execute()).map((row) => [row.id, row.body]));
        const present = part.filter((original) => bodies.has(original.id));
        if (present.length === 0) continue;
        const siblings = await trx.selectFrom('deliveries').select(['id']).where('event_id', 'in', [...new Set(present.map((original) => original.eventId))]).execute();
        const last = new Map<string, number>();
        for (const { id } of siblings) {
          const at = id.lastIndexOf(':replay-');
          if (at > 0) last.set(id.slice(0, at), Math.max(last.get(id.slice(0, at)) ?? 0, Number(id.slice(at + ':replay-'.length))));
        }
        const rows = present.map((original) => {
          const first = deliveryId(original.eventId, original.installationId);
          const n = (last.get(first) ?? 0) + 1;
          last.set(first, n);
          return { original, row: this.replayRow(original, n, bodies.get(original.id)!, now) };
        });
        const inserted = new Set((await trx.insertInto('deliveries').values(rows.map(({ row }) => row)).onConflict((oc) => oc.column('id').doNothing()).returning('id').execute()).map((row) => row.id));
        for (const { original, row } of rows) {
          // A concurrent replay took the number: the next free one, a row at a time.
          let id = row.id;
          for (let n = Number(id.slice(id.lastIndexOf(':replay-') + ':replay-'.length)); !inserted.has(id); ) {
            const next = this.replayRow(original, ++n, row.body, now);
            if ((await trx.insertInto('deliveries').values(next).onConflict((oc) => oc.column('id').doNothing()).returning('id').execute()).length) inserted.add((id = next.id));
          }
          replays.push({ id, eventId: original.eventId, installationId: original.installationId, createdAt: now });
        }
      }
      await withThem?.(trx, replays);
      return replays;
    });
  }

  /** The row of replay `n` of a delivery: its body as sealed, its original named. */
  private replayRow(original: Pick<DeliverySummary, 'id' | 'eventId' | 'installationId' | 'organizationId' | 'eventType' | 'url'>, n: number, body: string, now: number) {
    const row = this.deliveryRow({ id: deliveryId(original.eventId, original.installationId, n), eventId: original.eventId, installationId: original.installationId, organizationId: original.organizationId, eventType: original.eventType, url: original.url, body: '' }, now);
    return { ...row, body, replay_of: original.id };
  }

  private deliveryRow(delivery: NewDelivery, now: number) {
    return {
      id: delivery.id,
      event_id: delivery.eventId,
      installation_id: delivery.installationId,
      organization_id: delivery.organizationId,
      event_type: delivery.eventType,
      url: delivery.url ?? null,
      status: delivery.skipReason ? 'skipped' : delivery.held ? 'held' : 'pending',
      reason: delivery.skipReason ?? delivery.heldReason ?? null,
      body: this.encryption.seal(delivery.body),
      attempts: 0,
      replay_of: delivery.replayOf ?? null,
      workflow_id: null,
      run_id: null,
      created_at: now,
      updated_at: now,
      completed_at: delivery.skipReason ? now : null,
      seq: 0,
    };
  }

  /** The pending deliveries of events recorded earlier (and when), to hand them to the engine again. */
  async pendingOf(eventIds: string[]): Promise<PendingDelivery[]> {
    const rows = [];
    for (const part of chunks(eventIds)) {
      rows.push(...(await this.db.selectFrom('deliveries').select(PENDING_COLUMNS).where('event_id', 'in', part).where('status', '=', 'pending').execute()));
    }
    return rows.map(pendingDelivery);
  }

}
