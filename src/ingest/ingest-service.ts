import { recordingTime, type EventRecords } from '../delivery-log/event-records';
import type { PendingDelivery } from '../delivery-log/rows';
import type { InstallationIndex } from '../installations/read-model';
import type { EventRecord, NewEvent } from '../delivery-log/types';
import type { InstallationSummary } from '../installations/types';
import { newEventId } from '../ids';
import type { IngestedEvent } from '../webhooks/events';
import type { ShardItem } from '../workflows/shard-contract';
import { planDeliveries } from './fanout';
import { GroupCommit } from '../group-commit';
import { deliveriesFinished, deliveriesHeld, eventsIngested, reasonLabel } from '../metrics';
import { ENGINE_DEADLINE_MS, type ShardClient } from './shard-client';
import type { ReceiverStates } from './receiver-states';
import { inSpan, linksTo, traceparentOf, tracer } from '../tracing';
import { settleAll } from '../settle-all';

/**
 * An event on its way to the log (its id settled), with its request's deadline and its
 * ingest span's `traceparent` when tracing: beside the event, never in its payload.
 */
interface Submitted {
  event: IngestedEvent & { eventId: string };
  deadline: number;
  trace?: string;
}

/** DESIGN.md §4: `202 {eventId, deliveries}`; a repeated eventId answers the first ingest's body. */
export interface IngestAnswer {
  eventId: string;
  deliveries: string[];
}

/**
 * An eventId recorded before for another organization or event type: not a repeat of that
 * event (as a Stripe idempotency key reused with other parameters), refused rather than
 * answered with another event's deliveries, and possibly another tenant's.
 */
export class EventIdTakenError extends Error {}

/** A recorded pending delivery on its way to its shard, with the span its attempts continue. */
export type HandOver = PendingDelivery & { trace?: string };

/** What a flush answers for one event: its answer, or why it was refused. */
type Recorded = IngestAnswer | EventIdTakenError;

/** Events per flush of one shard: one read of installations, one transaction, one update. */
const FLUSH_EVENTS = 200;
/**
 * How long an ingest request may take, from its start, before it answers 503: "not known
 * to be accepted", within DESIGN.md's 2 s, whatever it waited for (the directory, the
 * flushes ahead of its own, the log, the engine).
 */
export const INGEST_DEADLINE_MS = 1800;

/**
 * Ingest owned by the engine (DESIGN.md §2). Concurrent events are coalesced per shard;
 * each flush plans the fan-out from the installations' read model, records events and
 * deliveries in the log (its key on eventId decides races between repeats), and hands the
 * new deliveries to the shard workflow. An answer means the engine holds them; an error
 * means "not known to be accepted", and a retry with the same eventId completes what was
 * recorded without delivering anything twice.
 */
export class IngestService {
  private readonly commits: GroupCommit<Submitted, Recorded>[];

  constructor(
    private readonly log: EventRecords,
    private readonly installations: InstallationIndex,
    private readonly shards: ShardClient,
    /** Where receivers stand now (failing, prompt), handed to shards beside their deliveries, and whose new events are held (none told: every shard finds out itself, nothing is held). */
    private readonly receivers?: Pick<ReceiverStates, 'stateOf' | 'holding'>,
  ) {
    this.commits = Array.from({ length: shards.shards }, (_, shard) => new GroupCommit((events) => this.flush(shard, events), FLUSH_EVENTS));
  }

  /** Records an event and hands its deliveries over by `deadline` (ms since 1970), or rejects (DeadlineError). */
  async ingest(event: IngestedEvent, deadline = Date.now() + INGEST_DEADLINE_MS): Promise<IngestAnswer> {
    const eventId = event.eventId ?? newEventId();
    const span = tracer.startSpan('ingest event', { attributes: { 'event.id': eventId, 'event.type': event.type, 'organization.id': event.organizationId } });
    const answer = await inSpan(span, () => this.commits[this.shards.shardOf(eventId)]!.submit({ event: { ...event, eventId }, deadline, trace: traceparentOf(span) }, deadline));
    if (answer instanceof EventIdTakenError) throw answer;
    span.setAttribute('event.deliveries', answer.deliveries.length);
    return answer;
  }

  /** The shard an event's deliveries go to. */
  shardOf(eventId: string): number {
    return this.shards.shardOf(eventId);
  }

  /** One flush carries many events: its span starts a trace of its own, linked to each event's. */
  private flush(shard: number, submitted: Submitted[]): Promise<Recorded[]> {
    const span = tracer.startSpan('ingest flush', { root: true, links: linksTo(submitted.map(({ trace }) => trace)), attributes: { 'delivery.shard': shard, 'ingest.events': submitted.length } });
    return inSpan(span, () => this.record(submitted));
  }

  private async record(submitted: Submitted[]): Promise<Recorded[]> {
    const events = submitted.map(({ event }) => event);
    // Read once for the flush, then each event matched against its own organization's alone.
    const installations = new Map<string, InstallationSummary[]>();
    for (const installation of await this.installations.of([...new Set(events.map((event) => event.organizationId))], ['active', 'paused'])) {
      const ofOrg = installations.get(installation.target.org);
      if (ofOrg) ofOrg.push(installation);
      else installations.set(installation.target.org, [installation]);
    }
    // An eventId submitted twice in one flush is planned, and traced, from its first submission: the one recorded if it is new.
    const planned = new Map<string, NewEvent>();
    const traces = new Map<string, string | undefined>();
    for (const { event, trace } of submitted) {
      if (planned.has(event.eventId)) continue;
      planned.set(event.eventId, { eventId: event.eventId, organizationId: event.organizationId, eventType: event.type, deliveries: planDeliveries(event, event.eventId, installations.get(event.organizationId) ?? [], (id) => this.receivers?.holding(id) ?? false) });
      traces.set(event.eventId, trace);
    }
    // The hand-over may take as long as the latest of its requests may wait, no longer: a hung one frees the shard's flush for those behind it.
    const deadline = Math.max(...submitted.map((item) => item.deadline));
    // New events are counted once recorded, before their hand-over: one whose ingest answered
    // 503 was ingested all the same, and its retry is answered again, not counted again.
    const countNew = (records: Map<string, EventRecord>) => {
      for (const record of records.values()) if (record.fresh) eventsIngested.inc({ type: record.eventType });
    };
    // The flush's installations say which are ordered lines: its hand-over asks the log nothing more.
    const lines = new Set([...installations.values()].flat().filter((installation) => installation.ordered).map((installation) => installation.id));
    const records = await this.commit([...planned.values()], traces, deadline, countNew, lines);
    return events.map((event) => {
      const record = records.get(event.eventId)!;
      if (record.organizationId !== event.organizationId || record.eventType !== event.type) return new EventIdTakenError(`eventId ${event.eventId} is taken by an earlier event that is not this one; give this event an id of its own`);
      return { eventId: event.eventId, deliveries: record.deliveryIds };
    });
  }

  /**
   * Records events with their planned deliveries and hands what they have to deliver to
   * their shards: the one path from "planned" to "the engine's", for ingest and for the
   * platform's own events. An event recorded earlier has what is still pending handed over
   * again (the engine may never have had it, if that ingest answered 503); a shard skips
   * ids it holds, a batch skips finished ones. That is done whoever repeats the eventId
   * (idempotent, and it touches only the recorded event's own deliveries): its true repeat
   * may share the flush with another organization's reuse of it, which is refused.
   */
  async commit(events: NewEvent[], traces = new Map<string, string | undefined>(), handOverBy?: number, onRecorded?: (records: Map<string, EventRecord>) => void, lines?: Set<string>): Promise<Map<string, EventRecord>> {
    const planned = new Map(events.map((event) => [event.eventId, event]));
    const now = recordingTime();
    const records = await this.log.recordEvents(events, now, lines);
    onRecorded?.(records);
    const handOver: HandOver[] = [];
    const earlier: string[] = [];
    for (const record of records.values()) {
      if (!record.fresh) {
        earlier.push(record.eventId);
        continue;
      }
      const trace = traces.get(record.eventId);
      for (const delivery of planned.get(record.eventId)!.deliveries) {
        if (delivery.skipReason) deliveriesFinished.inc({ status: 'skipped', event_type: delivery.eventType, reason: reasonLabel(delivery.skipReason) });
        else if (delivery.held) deliveriesHeld.inc({ event_type: delivery.eventType, reason: delivery.heldReason ?? 'installation_paused' });
        else handOver.push({ id: delivery.id, eventId: record.eventId, installationId: delivery.installationId, createdAt: now, ...(trace && { trace }) });
      }
    }
    // All under one deadline, so that the caller answers within 2 s whatever it carries.
    const pending = earlier.length ? await this.log.pendingOf(earlier) : [];
    await this.handOverRecorded([...handOver, ...pending], handOverBy, lines);
    return records;
  }

  /**
   * Hands recorded pending deliveries (new ones, repeats', replays, stranded ones) to their
   * shards, one hand-over per shard and epoch: each to the epoch it was recorded in, whose
   * workflow holds it if it got there before (and skips it then). Every shard and epoch gets
   * its hand-over; the first that failed is thrown once all are done.
   */
  async handOverRecorded(deliveries: HandOver[], deadline = Date.now() + ENGINE_DEADLINE_MS, knownLines?: Set<string>): Promise<void> {
    if (deliveries.length === 0) return;
    // An ordered installation's deliveries wait in its line (the log holds their order): it is woken, not handed them. Known to an ingest flush, read otherwise.
    const lines = knownLines ?? (await this.installations.orderedAmong([...new Set(deliveries.map((delivery) => delivery.installationId))]));
    const groups = new Map<string, { shard: number; epoch: number; items: ShardItem[] }>();
    for (const { id, eventId, installationId, createdAt, trace } of deliveries.filter((delivery) => !lines.has(delivery.installationId))) {
      const [shard, epoch] = [this.shardOf(eventId), this.shards.epochOf(createdAt)];
      const state = this.receivers?.stateOf(installationId);
      const item = { id, installationId, ...(trace && { trace }), ...(state === 'prompt' ? { prompt: true as const } : state && { failing: state }) };
      const group = groups.get(`${shard}/${epoch}`);
      if (group) group.items.push(item);
      else groups.set(`${shard}/${epoch}`, { shard, epoch, items: [item] });
    }
    await settleAll([...[...groups.values()].map(({ shard, epoch, items }) => this.shards.enqueue(shard, items, epoch, deadline)), ...[...lines].map((installationId) => this.shards.wakeLine(installationId, deadline))]);
  }
}
