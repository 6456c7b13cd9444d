import type { Kysely, Transaction } from 'kysely';
import type { Encryption } from '../encryption';
import { deliveryId } from '../ids';
import type { Schema } from './schema';
import { chunks, PENDING_COLUMNS, pendingDelivery, type PendingDelivery } from './rows';
import type { DeliverySummary, EventRecord, NewDelivery, NewEvent } from './types';

let lastRecordedAt = 0;
/**
 * When a delivery is recorded (ms since 1970), later than the last this process took:
 * deliveries without a place in a line (recorded before their installation was ordered)
 * go by this time first, and two of a process's recordings in one millisecond would have
 * tied, their deliveries then sent by id. It runs ahead of the clock only while a process
 * records more than 1,000 times a second, and catches up by itself.
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
   * `ordered`: the installations among theirs that the caller read as ordered just before
   * (an ingest flush's read of its installations), which spares the read of linePlaces.
   */
  async recordEvents(events: NewEvent[], now = recordingTime(), ordered?: ReadonlySet<string>): Promise<Map<string, EventRecord>> {
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
      // `seq`: their order in the flush (a batch's order), kept among those without a line number.
      const seq = new Map(deliveries.map((delivery, i) => [delivery.id, i]));
      const lines = await this.linePlaces(trx, deliveries.filter((delivery) => !delivery.skipReason), ordered);
      for (const part of chunks(deliveries)) {
        await trx
          .insertInto('deliveries')
          .values(part.map((delivery) => ({ ...this.deliveryRow(delivery, now), seq: seq.get(delivery.id)!, line_no: lines.get(delivery.id) ?? 0 })))
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
      // The bodies first: the places in lines are taken for what is still in the log, once for all (in one order), and as late as
      // can be, since a line's counter stays locked from then until this commits (PostgreSQL), and its ingest flushes wait.
      const present: { original: (typeof originals)[number]; body: string }[] = [];
      for (const part of chunks(originals)) {
        const bodies = new Map((await trx.selectFrom('deliveries').select(['id', 'body']).where('id', 'in', part.map((original) => original.id)).execute()).map((row) => [row.id, row.body]));
        for (const original of part) if (bodies.has(original.id)) present.push({ original, body: bodies.get(original.id)! });
      }
      // At the back of their lines, in the order given.
      const lines = await this.linePlaces(trx, present.map(({ original }) => original));
      const replays: PendingDelivery[] = [];
      for (const part of chunks(present)) {
        // One read of the events' deliveries for the whole part, one insert.
        const siblings = await trx.selectFrom('deliveries').select(['id']).where('event_id', 'in', [...new Set(part.map(({ original }) => original.eventId))]).execute();
        const last = new Map<string, number>();
        for (const { id } of siblings) {
          const at = id.lastIndexOf(':replay-');
          if (at > 0) last.set(id.slice(0, at), Math.max(last.get(id.slice(0, at)) ?? 0, Number(id.slice(at + ':replay-'.length))));
        }
        const rows = part.map(({ original, body }) => {
          const first = deliveryId(original.eventId, original.installationId);
          const n = (last.get(first) ?? 0) + 1;
          last.set(first, n);
          return { original, row: { ...this.replayRow(original, n, body, now), line_no: lines.get(original.id) ?? 0 } };
        });
        const inserted = new Set((await trx.insertInto('deliveries').values(rows.map(({ row }) => row)).onConflict((oc) => oc.column('id').doNothing()).returning('id').execute()).map((row) => row.id));
        for (const { original, row } of rows) {
          // A concurrent replay took the number: the next free one, a row at a time.
          let id = row.id;
          for (let n = Number(id.slice(id.lastIndexOf(':replay-') + ':replay-'.length)); !inserted.has(id); ) {
            const next = { ...this.replayRow(original, ++n, row.body, now), line_no: row.line_no };
            if ((await trx.insertInto('deliveries').values(next).onConflict((oc) => oc.column('id').doNothing()).returning('id').execute()).length) inserted.add((id = next.id));
          }
          replays.push({ id, eventId: original.eventId, installationId: original.installationId, createdAt: now });
        }
      }
      await withThem?.(trx, replays);
      return replays;
    });
  }

  /**
   * The places in their installations' lines of the deliveries about to be recorded in
   * `trx`, by id, for those of ordered installations: numbers taken from each one's counter,
   * in the order given. On PostgreSQL the counter's row stays locked until `trx` commits,
   * and SQLite has one writer: a line's numbers follow the order its recordings commit in,
   * whatever the recorders' clocks (several API processes, shards, operations), so a line
   * never sends a delivery and then finds one before it. Counters are taken in one order
   * (by installation id), so two recordings never wait on each other in a circle. Which
   * installations are ordered is read here unless `known` (read by the caller just before).
   */
  private async linePlaces(trx: Transaction<Schema>, deliveries: Pick<NewDelivery, 'id' | 'installationId'>[], known?: ReadonlySet<string>): Promise<Map<string, number>> {
    const places = new Map<string, number>();
    // The common flush: none of its installations is ordered.
    if (known?.size === 0) return places;
    const byInstallation = new Map<string, Pick<NewDelivery, 'id' | 'installationId'>[]>();
    for (const delivery of deliveries) {
      const theirs = byInstallation.get(delivery.installationId);
      if (theirs) theirs.push(delivery);
      else byInstallation.set(delivery.installationId, [delivery]);
    }
    const ordered = known ? [...byInstallation.keys()].filter((id) => known.has(id)) : [];
    for (const part of known ? [] : chunks([...byInstallation.keys()])) {
      ordered.push(...(await trx.selectFrom('installations').select('id').where('id', 'in', part).where('ordered', '=', 1).execute()).map((row) => row.id));
    }
    // One statement a part, its rows in that order: PostgreSQL locks them as it goes.
    for (const part of chunks(ordered.sort())) {
      const taken = await trx
        .insertInto('installation_lines')
        .values(part.map((installationId) => ({ installation_id: installationId, last_no: byInstallation.get(installationId)!.length })))
        .onConflict((oc) => oc.column('installation_id').doUpdateSet((eb) => ({ last_no: eb('installation_lines.last_no', '+', eb.ref('excluded.last_no')) })))
        .returning(['installation_id', 'last_no'])
        .execute();
      for (const { installation_id, last_no } of taken) {
        const theirs = byInstallation.get(installation_id)!;
        theirs.forEach((delivery, i) => places.set(delivery.id, Number(last_no) - theirs.length + 1 + i));
      }
    }
    return places;
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
      line_no: 0,
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
