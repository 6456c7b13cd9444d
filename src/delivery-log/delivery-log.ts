import type { ExpressionBuilder, Kysely, Selectable, SelectQueryBuilder } from 'kysely';
import type { Encryption } from '../encryption';
import type { LogDatabase } from './database';
import { deliveryId } from '../ids';
import type { AttemptsTable, DeliveriesTable, Schema } from './schema';
import type { AttemptRecord, Delivery, DeliveryFilter, DeliveryOutcome, DeliveryStatus, DeliverySummary, DeliveryToAttempt, EventRecord, NewDelivery, NewEvent, PageCursor, StartedAttempt, WorkflowLink } from './types';

type DeliveryChange = Partial<Pick<DeliveriesTable, 'status' | 'reason' | 'updated_at' | 'completed_at' | 'attempts' | 'url' | 'workflow_id' | 'run_id'>>;

/** Rows per multi-row statement: well under SQLite's 32,766 bound parameters. */
const CHUNK = 500;

/** A pending delivery as a shard is handed it again: to the epoch it was recorded in. */
export interface PendingDelivery {
  id: string;
  eventId: string;
  installationId: string;
  createdAt: number;
}

const pendingDelivery = (row: { id: string; event_id: string; installation_id: string; created_at: number }): PendingDelivery => ({ id: row.id, eventId: row.event_id, installationId: row.installation_id, createdAt: Number(row.created_at) });

/** Ranges merged in one compound SELECT at most (SQLite refuses more than 500 arms). */
const MERGED_RANGES = 400;

/** What a delivery's summary shows: every column but the body. */
const SUMMARY_COLUMNS = ['id', 'event_id', 'installation_id', 'organization_id', 'event_type', 'url', 'status', 'reason', 'attempts', 'replay_of', 'workflow_id', 'run_id', 'created_at', 'completed_at'] as const;
type Summary = Pick<Selectable<DeliveriesTable>, (typeof SUMMARY_COLUMNS)[number]>;

function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * What a receiver answered, as text either database stores: PostgreSQL refuses NUL in text,
 * and one receiver's binary answer must not fail its whole batch's write (run again, its
 * deliveries would be POSTed again, ten times, then failed). NUL shows as U+FFFD.
 */
const storableText = (text: string | undefined): string | null => (text === undefined ? null : text.replaceAll('\u0000', '\uFFFD'));

const iso = (ms: number | null | undefined): string | undefined => (ms === null || ms === undefined ? undefined : new Date(ms).toISOString());

function attemptOf(row: Selectable<AttemptsTable>): AttemptRecord {
  return {
    attempt: row.attempt,
    startedAt: new Date(row.started_at).toISOString(),
    durationMs: row.duration_ms,
    url: row.url,
    ...(row.status_code !== null && { statusCode: row.status_code }),
    ...(row.error !== null && { error: row.error as AttemptRecord['error'] }),
    ...(row.error_message !== null && { errorMessage: row.error_message }),
    ...(row.response_body !== null && { responseBody: row.response_body }),
    ...(row.next_delay_ms !== null && { nextDelayMs: row.next_delay_ms }),
  };
}

/**
 * The record of every delivery and attempt (DESIGN.md §2): written in batches by ingest
 * and by attempt batches, read by the API and the CLI. Payload bodies are sealed at rest.
 */
export class DeliveryLog {
  readonly db: Kysely<Schema>;

  constructor(
    readonly database: LogDatabase,
    private readonly encryption: Encryption,
    /** Builds the Temporal UI link of a shard run (PLATFORM_TEMPORAL_UI_URL). */
    private readonly workflowUrl: (workflowId: string, runId: string) => string | undefined = () => undefined,
  ) {
    this.db = database.db;
  }

  /**
   * Records events with their planned deliveries. The events table's key decides races: an
   * eventId recorded before keeps its first answer, and nothing of this call is added to it.
   */
  async recordEvents(events: NewEvent[], now = Date.now()): Promise<Map<string, EventRecord>> {
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
      for (const part of chunks(deliveries)) {
        await trx
          .insertInto('deliveries')
          .values(part.map((delivery) => this.deliveryRow(delivery, now)))
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
   * A replay: a new delivery with the body of the one it replays, under the next free
   * `<eventId>:<installationId>:replay-<n>` (found in one read of the event's deliveries; a
   * concurrent replay taking it moves to the next). Answers its id, or undefined when the
   * original is no longer in the log (purged since it was read).
   */
  async recordReplay(original: Pick<DeliverySummary, 'id' | 'eventId' | 'installationId' | 'organizationId' | 'eventType' | 'url'>, now = Date.now()): Promise<string | undefined> {
    const source = await this.db.selectFrom('deliveries').select('body').where('id', '=', original.id).executeTakeFirst();
    if (!source) return undefined;
    const prefix = `${deliveryId(original.eventId, original.installationId)}:replay-`;
    const siblings = await this.db.selectFrom('deliveries').select('id').where('event_id', '=', original.eventId).where('installation_id', '=', original.installationId).execute();
    let n = Math.max(0, ...siblings.map(({ id }) => (id.startsWith(prefix) ? Number(id.slice(prefix.length)) : 0)));
    for (;;) {
      const id = deliveryId(original.eventId, original.installationId, ++n);
      const row = this.deliveryRow({ id, eventId: original.eventId, installationId: original.installationId, organizationId: original.organizationId, eventType: original.eventType, url: original.url, body: '' }, now);
      const inserted = await this.db
        .insertInto('deliveries')
        .values({ ...row, body: source.body, replay_of: original.id })
        .onConflict((oc) => oc.column('id').doNothing())
        .returning('id')
        .execute();
      if (inserted.length === 1) return id;
    }
  }

  private deliveryRow(delivery: NewDelivery, now: number) {
    return {
      id: delivery.id,
      event_id: delivery.eventId,
      installation_id: delivery.installationId,
      organization_id: delivery.organizationId,
      event_type: delivery.eventType,
      url: delivery.url ?? null,
      status: delivery.skipReason ? 'skipped' : 'pending',
      reason: delivery.skipReason ?? null,
      body: this.encryption.seal(delivery.body),
      attempts: 0,
      replay_of: delivery.replayOf ?? null,
      workflow_id: null,
      run_id: null,
      created_at: now,
      updated_at: now,
      completed_at: delivery.skipReason ? now : null,
    };
  }

  /** The pending deliveries of events recorded earlier (and when), to hand them to the engine again. */
  async pendingOf(eventIds: string[]): Promise<PendingDelivery[]> {
    const rows = [];
    for (const part of chunks(eventIds)) {
      rows.push(...(await this.db.selectFrom('deliveries').select(['id', 'event_id', 'installation_id', 'created_at']).where('event_id', 'in', part).where('status', '=', 'pending').execute()));
    }
    return rows.map(pendingDelivery);
  }

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

  private async pendingRecordedBefore(which: 'never attempted' | 'attempted', before: number, limit: number, after?: PageCursor): Promise<PendingDelivery[]> {
    const rows = await this.db
      .selectFrom('deliveries')
      .select(['id', 'event_id', 'installation_id', 'created_at'])
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
   * The pending deliveries of an attempt batch with their bodies, and the attempt asked for
   * when an earlier run of the batch recorded it (its count goes up in the same transaction,
   * so only then are the attempts read).
   */
  async toAttempt(entries: { id: string; attempt: number }[]): Promise<Map<string, DeliveryToAttempt>> {
    const asked = new Map(entries.map((entry) => [entry.id, entry.attempt]));
    const found = new Map<string, DeliveryToAttempt>();
    for (const part of chunks([...asked.keys()])) {
      const rows = await this.db.selectFrom('deliveries').select(['id', 'event_id', 'installation_id', 'event_type', 'attempts', 'body']).where('id', 'in', part).where('status', '=', 'pending').execute();
      for (const row of rows) found.set(row.id, { id: row.id, eventId: row.event_id, installationId: row.installation_id, eventType: row.event_type, body: this.encryption.open(row.body), interruptedBefore: 0 });
      const rerun = rows.filter((row) => row.attempts >= asked.get(row.id)!).map((row) => row.id);
      for (const record of rerun.length ? await this.db.selectFrom('attempts').selectAll().where('delivery_id', 'in', rerun).execute() : []) {
        if (record.attempt === asked.get(record.delivery_id)) found.get(record.delivery_id)!.recorded = attemptOf(record);
      }
      const retried = rows.filter((row) => row.attempts > 0).map((row) => row.id);
      for (const earlier of retried.length ? await this.db.selectFrom('attempts').select(['delivery_id', 'attempt']).where('delivery_id', 'in', retried).where('error', '=', 'interrupted').execute() : []) {
        if (earlier.attempt < asked.get(earlier.delivery_id)!) found.get(earlier.delivery_id)!.interruptedBefore += 1;
      }
      // Started by a run that died before recording it: its answer is unknown, and it is not sent again.
      for (const started of await this.db.selectFrom('attempts_in_flight').selectAll().where('delivery_id', 'in', rows.map((row) => row.id)).execute()) {
        const delivery = found.get(started.delivery_id)!;
        if (started.attempt === asked.get(started.delivery_id) && !delivery.recorded) delivery.interrupted = { deliveryId: started.delivery_id, attempt: started.attempt, startedAt: new Date(Number(started.started_at)).toISOString(), url: started.url };
      }
    }
    return found;
  }

  /** Attempts written as started that were not made after all (no room for integration code): the same attempt is made later. */
  async forgetStarted(attempts: Pick<StartedAttempt, 'deliveryId' | 'attempt'>[]): Promise<void> {
    for (const { deliveryId, attempt } of attempts) await this.db.deleteFrom('attempts_in_flight').where('delivery_id', '=', deliveryId).where('attempt', '=', attempt).execute();
  }

  /** Attempts about to go out, written first: a worker that dies before recording their answers leaves them for the next run to find. */
  async recordStarted(attempts: StartedAttempt[], run: { workflowId: string; runId: string }): Promise<void> {
    if (attempts.length === 0) return;
    for (const part of chunks(attempts)) {
      await this.db
        .insertInto('attempts_in_flight')
        .values(part.map((started) => ({ delivery_id: started.deliveryId, attempt: started.attempt, started_at: Date.parse(started.startedAt), url: started.url, workflow_id: run.workflowId, run_id: run.runId })))
        .onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing())
        .execute();
    }
  }

  /**
   * Which of these delivery ids are not in the log at all. A quarantined one (recorded for
   * the wrong organization, see migration 0004) is known, not lost: never attempted, not absent.
   */
  async absent(ids: string[]): Promise<string[]> {
    let missing = ids;
    for (const table of ['deliveries', 'quarantined_deliveries'] as const) {
      if (missing.length === 0) break;
      const present = new Set<string>();
      for (const part of chunks(missing)) for (const row of await this.db.selectFrom(table).select('id').where('id', 'in', part).execute()) present.add(row.id);
      missing = missing.filter((id) => !present.has(id));
    }
    return missing;
  }

  /** How many deliveries migration 0004 took out of the log, for the operator to review. */
  async quarantined(): Promise<number> {
    const { count } = await this.db.selectFrom('quarantined_deliveries').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
    return Number(count);
  }

  /** Writes an attempt batch's outcomes, attempts and states together. */
  async recordOutcomes(outcomes: DeliveryOutcome[], run: { workflowId: string; runId: string }, now = Date.now()): Promise<void> {
    if (outcomes.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      const attempts = outcomes.filter((outcome) => outcome.attempt).map(({ id, attempt }) => this.attemptRow(id, attempt!, run));
      for (const part of chunks(attempts)) {
        await trx
          .insertInto('attempts')
          .values(part)
          .onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing())
          .execute();
        // Recorded: no longer in flight (a delivery has one attempt in flight at a time).
        await trx.deleteFrom('attempts_in_flight').where('delivery_id', 'in', part.map((row) => row.delivery_id)).execute();
      }
      // One statement per distinct change: a batch of one installation mostly shares one.
      const groups = new Map<string, { change: DeliveryChange; ids: string[] }>();
      for (const outcome of outcomes) {
        const change = this.changeOf(outcome, run, now);
        const key = JSON.stringify(change);
        const group = groups.get(key);
        if (group) group.ids.push(outcome.id);
        else groups.set(key, { change, ids: [outcome.id] });
      }
      for (const { change, ids } of groups.values()) {
        for (const part of chunks(ids)) {
          let update = trx
            .updateTable('deliveries')
            .set(change)
            .where('id', 'in', part)
            // A finished delivery never changes again, whoever writes late.
            .where('status', '=', 'pending');
          // Nor does its count go back (a batch run again writes what it had recorded), but a
          // final outcome of the attempt counted last still ends the delivery.
          const attempt = change.attempts;
          if (attempt !== undefined) update = update.where((eb) => (change.status === 'pending' ? eb('attempts', '<', attempt) : eb('attempts', '<=', attempt)));
          await update.execute();
        }
      }
    });
  }

  private changeOf(outcome: DeliveryOutcome, run: { workflowId: string; runId: string }, now: number): DeliveryChange {
    const done = outcome.status !== 'pending';
    return {
      status: outcome.status,
      reason: outcome.reason ?? null,
      updated_at: now,
      completed_at: done ? now : null,
      ...(outcome.attempt && { attempts: outcome.attempt.attempt, url: outcome.attempt.url, workflow_id: run.workflowId, run_id: run.runId }),
    };
  }

  private attemptRow(deliveryId: string, attempt: AttemptRecord, run: { workflowId: string; runId: string }) {
    return {
      delivery_id: deliveryId,
      attempt: attempt.attempt,
      started_at: Date.parse(attempt.startedAt),
      duration_ms: attempt.durationMs,
      url: attempt.url,
      status_code: attempt.statusCode ?? null,
      error: attempt.error ?? null,
      error_message: storableText(attempt.errorMessage),
      response_body: storableText(attempt.responseBody),
      next_delay_ms: attempt.nextDelayMs ?? null,
      workflow_id: run.workflowId,
      run_id: run.runId,
    };
  }

  /** Deliveries waiting for a retry: pending, with at least one attempt. */
  async countRetrying(): Promise<number> {
    const row = await this.db.selectFrom('deliveries').select(({ fn }) => fn.countAll<number>().as('n')).where('status', '=', 'pending').where('attempts', '>', 0).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async get(id: string): Promise<Delivery | undefined> {
    const row = await this.db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    const attempts = await this.db.selectFrom('attempts').selectAll().where('delivery_id', '=', id).orderBy('attempt').execute();
    return { ...this.summaryOf(row), attempts: attempts.map((attempt) => ({ ...attemptOf(attempt), ...this.linkOf(attempt.workflow_id, attempt.run_id) })) };
  }

  /** The shard run that made an attempt (or a delivery's last), with its page in the Temporal UI; nothing if none did. */
  private linkOf(workflowId: string | null, runId: string | null): { workflow?: WorkflowLink } {
    return workflowId && runId ? { workflow: { workflowId, runId, url: this.workflowUrl(workflowId, runId) } } : {};
  }

  /**
   * A page of deliveries, newest first by (created_at, id). Each range reads one index in
   * order: an installation's (with its status), an organization's (with its status); a
   * member of several organizations gets one range per organization, merged by the
   * database, so that ties order as its page cursor compares them (its collation, not
   * ours). An event's few deliveries are read by the event index and filtered here.
   */
  async list(filter: DeliveryFilter, pageSize: number, after?: PageCursor): Promise<{ items: DeliverySummary[]; next?: PageCursor }> {
    if (filter.orgs.length === 0) return { items: [] };
    const limit = pageSize + 1;
    let rows: Summary[];
    if (filter.eventId) {
      const ofEvent = await this.range(filter, after).where('event_id', '=', filter.eventId).execute();
      rows = ofEvent.filter((row) => (!filter.installation || row.installation_id === filter.installation) && (!filter.status || row.status === filter.status)).slice(0, limit);
    } else if (filter.installation) {
      rows = await this.range(filter, after).where('installation_id', '=', filter.installation).$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!)).limit(limit).execute();
    } else {
      rows = await this.merged(filter.orgs.map((org) => this.range(filter, after).where('organization_id', '=', org).$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!)).limit(limit)), limit).execute();
    }
    // An installation's or an event's deliveries are all of one organization: the caller's, or none.
    rows = rows.filter((row) => filter.orgs.includes(row.organization_id));
    const items = rows.slice(0, pageSize).map((row) => this.summaryOf(row));
    const last = rows.length > pageSize ? rows[pageSize - 1] : undefined;
    return { items, next: last && { createdAt: last.created_at, id: last.id } };
  }

  /** Summaries (no body) newest first, within the filter's times and after the cursor. */
  private range(filter: DeliveryFilter, after: PageCursor | undefined) {
    return this.db
      .selectFrom('deliveries')
      .select(SUMMARY_COLUMNS)
      .$if(filter.since !== undefined, (q) => q.where('created_at', '>=', filter.since!))
      .$if(filter.until !== undefined, (q) => q.where('created_at', '<=', filter.until!))
      // A row comparison: both databases read it as a range of the index, not a filter (a deep page would read all above it).
      .$if(after !== undefined, (q) => q.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after!.createdAt, after!.id))))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc');
  }

  /**
   * One range per organization, merged newest first by the database, a page at most: a
   * compound SELECT of at most MERGED_RANGES arms (SQLite takes 500), merged again above
   * that for a member of more organizations.
   */
  private merged(ranges: SelectQueryBuilder<Schema, 'deliveries', Summary>[], limit: number): SelectQueryBuilder<Schema, 'deliveries', Summary> {
    if (ranges.length === 1) return ranges[0]!;
    const groups: SelectQueryBuilder<Schema, 'deliveries', Summary>[] = [];
    for (let start = 0; start < ranges.length; start += MERGED_RANGES) {
      const arms = ranges.slice(start, start + MERGED_RANGES).map((range, i) => this.db.selectFrom(range.as(`r${i}`)).selectAll());
      const union = arms.slice(1).reduce((compound, arm) => compound.unionAll(arm), arms[0]!);
      groups.push(this.db.selectFrom(union.as('merged')).selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit) as unknown as SelectQueryBuilder<Schema, 'deliveries', Summary>);
    }
    return this.merged(groups, limit);
  }

  private summaryOf(row: Summary): DeliverySummary {
    const status = row.status as DeliveryStatus;
    return {
      id: row.id,
      eventId: row.event_id,
      installationId: row.installation_id,
      organizationId: row.organization_id,
      eventType: row.event_type,
      ...(row.url !== null && { url: row.url }),
      status,
      createdAt: new Date(row.created_at).toISOString(),
      ...(row.completed_at !== null && { completedAt: iso(row.completed_at) }),
      ...(status === 'skipped' && row.reason !== null && { skipReason: row.reason }),
      ...(status === 'failed' && row.reason !== null && { failureReason: row.reason }),
      ...(row.replay_of !== null && { replayOf: row.replay_of }),
      attemptCount: row.attempts,
      ...this.linkOf(row.workflow_id, row.run_id),
    };
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
    await this.db.transaction().execute(async (trx) => {
      for (const part of chunks(deliveries.map((row) => row.id))) {
        await trx.deleteFrom('attempts').where('delivery_id', 'in', part).execute();
        await trx.deleteFrom('attempts_in_flight').where('delivery_id', 'in', part).execute();
        await trx.deleteFrom('deliveries').where('id', 'in', part).execute();
      }
      // Again here: a replay recorded since the select keeps its event's record.
      for (const part of chunks(events.map((row) => row.event_id))) await trx.deleteFrom('events').where('event_id', 'in', part).where(noDeliveryLeft).execute();
      for (const part of chunks(states.map((row) => row.nonce))) await trx.deleteFrom('oauth_states').where('nonce', 'in', part).execute();
    });
    return deliveries.length + events.length + states.length;
  }
}
