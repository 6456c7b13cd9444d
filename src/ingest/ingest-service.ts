import type { DeliveryLog } from '../delivery-log/delivery-log';
import type { InstallationIndex } from '../delivery-log/installation-index';
import type { NewEvent } from '../delivery-log/types';
import { newEventId } from '../ids';
import type { IngestedEvent } from '../webhooks/events';
import type { ShardItem } from '../workflows/delivery-shard';
import { planDeliveries } from './fanout';
import { GroupCommit } from './group-commit';
import { deliveriesFinished, eventsIngested } from '../metrics';
import type { ShardClient } from './shard-client';
import { activeTraceparent, inSpan, linksTo, traceparentOf, tracer } from '../tracing';

/** An event on its way to the log: its id settled, and its ingest span's `traceparent` when tracing. */
type Submitted = IngestedEvent & { eventId: string; trace?: string };

/** DESIGN.md §4: `202 {eventId, deliveries}`; a repeated eventId answers the first ingest's body. */
export interface IngestAnswer {
  eventId: string;
  deliveries: string[];
}

/** Events per flush of one shard: one read of installations, one transaction, one update. */
const FLUSH_EVENTS = 200;

/**
 * Ingest owned by the engine (DESIGN.md §2). Concurrent events are coalesced per shard;
 * each flush plans the fan-out from the installations' read model, records events and
 * deliveries in the log (its key on eventId decides races between repeats), and hands the
 * new deliveries to the shard workflow. An answer means the engine holds them; an error
 * means "not known to be accepted", and a retry with the same eventId completes what was
 * recorded without delivering anything twice.
 */
export class IngestService {
  private readonly commits: GroupCommit<Submitted, IngestAnswer>[];

  constructor(
    private readonly log: DeliveryLog,
    private readonly installations: InstallationIndex,
    private readonly shards: ShardClient,
  ) {
    this.commits = Array.from({ length: shards.shards }, (_, shard) => new GroupCommit((events) => this.flush(shard, events), FLUSH_EVENTS));
  }

  async ingest(event: IngestedEvent): Promise<IngestAnswer> {
    const eventId = event.eventId ?? newEventId();
    const span = tracer.startSpan('ingest event', { attributes: { 'event.id': eventId, 'event.type': event.type, 'organization.id': event.organizationId } });
    const answer = await inSpan(span, () => this.commits[this.shards.shardOf(eventId)]!.submit({ ...event, eventId, trace: traceparentOf(span) }));
    span.setAttribute('event.deliveries', answer.deliveries.length);
    eventsIngested.inc({ type: event.type });
    return answer;
  }

  /** Hands one more delivery of a recorded event (a replay) to its shard. */
  async enqueue(delivery: ShardItem & { eventId: string }): Promise<void> {
    const trace = activeTraceparent();
    await this.shards.enqueue(this.shards.shardOf(delivery.eventId), [{ id: delivery.id, installationId: delivery.installationId, ...(trace && { trace }) }]);
  }

  /** One flush carries many events: its span starts a trace of its own, linked to each event's. */
  private flush(shard: number, events: Submitted[]): Promise<IngestAnswer[]> {
    const span = tracer.startSpan('ingest flush', { root: true, links: linksTo(events.map((event) => event.trace)), attributes: { 'delivery.shard': shard, 'ingest.events': events.length } });
    return inSpan(span, () => this.record(shard, events));
  }

  private async record(shard: number, events: Submitted[]): Promise<IngestAnswer[]> {
    const installations = await this.installations.of([...new Set(events.map((event) => event.organizationId))], ['active', 'paused']);
    const planned = new Map<string, NewEvent>();
    const traces = new Map(events.map((event) => [event.eventId, event.trace]));
    for (const event of events) {
      if (planned.has(event.eventId)) continue;
      planned.set(event.eventId, { eventId: event.eventId, organizationId: event.organizationId, eventType: event.type, deliveries: planDeliveries(event, event.eventId, installations) });
    }
    const records = await this.log.recordEvents([...planned.values()]);
    for (const record of records.values()) {
      if (!record.fresh) continue;
      for (const delivery of planned.get(record.eventId)!.deliveries) if (delivery.skipReason) deliveriesFinished.inc({ status: 'skipped', event_type: delivery.eventType });
    }
    const handOver: ShardItem[] = [];
    const earlier: string[] = [];
    for (const record of records.values()) {
      const trace = traces.get(record.eventId);
      if (record.fresh) handOver.push(...planned.get(record.eventId)!.deliveries.filter((d) => !d.skipReason).map((d) => ({ id: d.id, installationId: d.installationId, ...(trace && { trace }) })));
      else earlier.push(record.eventId);
    }
    // Recorded earlier: what is still pending is handed over again (the engine may never have
    // had it, if that ingest answered 503); a shard skips ids it holds, a batch skips finished ones.
    if (earlier.length) handOver.push(...(await this.log.pendingOf(earlier)).map(({ id, installationId }) => ({ id, installationId })));
    await this.shards.enqueue(shard, handOver);
    return events.map((event) => ({ eventId: event.eventId, deliveries: records.get(event.eventId)!.deliveryIds }));
  }
}
