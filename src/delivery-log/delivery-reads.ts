import type { Kysely, Selectable, SelectQueryBuilder } from 'kysely';
import type { DeliveriesTable, Schema } from './schema';
import { attemptOf } from './rows';
import type { Encryption } from '../encryption';
import type { Delivery, DeliveryFilter, DeliveryStatus, DeliverySummary, PageCursor, WorkflowLink } from './types';

/** Ranges merged in one compound SELECT at most (SQLite refuses more than 500 arms). */
const MERGED_RANGES = 400;

/** What a delivery's summary shows: every column but the body. */
const SUMMARY_COLUMNS = ['id', 'event_id', 'installation_id', 'organization_id', 'event_type', 'url', 'status', 'reason', 'attempts', 'replay_of', 'workflow_id', 'run_id', 'created_at', 'completed_at'] as const;
type Summary = Pick<Selectable<DeliveriesTable>, (typeof SUMMARY_COLUMNS)[number]>;

const iso = (ms: number | null | undefined): string | undefined => (ms === null || ms === undefined ? undefined : new Date(ms).toISOString());

/** The log as members read it (the API, the CLI) and as the metrics count it. */
export class DeliveryReads {
  constructor(
    private readonly db: Kysely<Schema>,
    private readonly encryption: Encryption,
    /** Builds the Temporal UI link of a shard run (PLATFORM_TEMPORAL_UI_URL). */
    private readonly workflowUrl: (workflowId: string, runId: string) => string | undefined = () => undefined,
  ) {}

  /** How many deliveries migration 0004 took out of the log, for the operator to review. */
  async quarantined(): Promise<number> {
    const { count } = await this.db.selectFrom('quarantined_deliveries').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
    return Number(count);
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
    return { ...this.summaryOf(row), payload: this.encryption.open(row.body), attempts: attempts.map((attempt) => ({ ...attemptOf(attempt), ...this.linkOf(attempt.workflow_id, attempt.run_id) })) };
  }

  /** The shard run that made an attempt (or a delivery's last), with its page in the Temporal UI; nothing if none did. */
  private linkOf(workflowId: string | null, runId: string | null): { workflow?: WorkflowLink } {
    return workflowId && runId ? { workflow: { workflowId, runId, url: this.workflowUrl(workflowId, runId) } } : {};
  }

  /**
   * A page of deliveries, newest first by (created_at, id). Each range reads one index in
   * order: an installation's (with its status), an organization's (with its status, or its
   * event type); a member of several organizations gets one range per organization, merged
   * by the database, so that ties order as its page cursor compares them (its collation,
   * not ours). An event's few deliveries are read by the event index and filtered here.
   * Filters beyond an index's columns (an installation's event type, an organization's
   * status and event type together) are checked on the rows its range reads.
   */
  async list(filter: DeliveryFilter, pageSize: number, after?: PageCursor): Promise<{ items: DeliverySummary[]; next?: PageCursor }> {
    if (filter.orgs.length === 0) return { items: [] };
    const limit = pageSize + 1;
    let rows: Summary[];
    if (filter.eventId) {
      const ofEvent = await this.range(filter, after).where('event_id', '=', filter.eventId).execute();
      rows = ofEvent.filter((row) => (!filter.installation || row.installation_id === filter.installation) && (!filter.status || row.status === filter.status) && (!filter.eventType || row.event_type === filter.eventType)).slice(0, limit);
    } else if (filter.installation) {
      rows = await this.narrowed(this.range(filter, after).where('installation_id', '=', filter.installation), filter).limit(limit).execute();
    } else {
      rows = await this.merged(filter.orgs.map((org) => this.narrowed(this.range(filter, after).where('organization_id', '=', org), filter).limit(limit)), limit).execute();
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

  /** A range narrowed to the filter's status and event type. */
  private narrowed(range: SelectQueryBuilder<Schema, 'deliveries', Summary>, filter: DeliveryFilter): SelectQueryBuilder<Schema, 'deliveries', Summary> {
    return range.$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!)).$if(filter.eventType !== undefined, (q) => q.where('event_type', '=', filter.eventType!));
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
      ...(status === 'held' && row.reason !== null && { heldReason: row.reason }),
      ...(row.replay_of !== null && { replayOf: row.replay_of }),
      attemptCount: row.attempts,
      ...this.linkOf(row.workflow_id, row.run_id),
    };
  }
}
