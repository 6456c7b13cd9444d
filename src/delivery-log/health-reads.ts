import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema';
import { isFailing, type FailingKind, type ReceiverState } from '../webhooks/schedule';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
/** The attempts a latency figure is taken from at most: the installation's latest of the day. */
const LATENCY_SAMPLE = 1000;

/** Deliveries recorded in an hour (or a day), by status. */
export interface StatusCounts {
  delivered: number;
  failed: number;
  pending: number;
  held: number;
  skipped: number;
}

/** What the API shows of a receiver's health. */
export interface ReceiverHealth {
  consecutiveFailures: number;
  failingSince?: string;
  lastSuccessAt?: string;
  lastFailure?: { at: string; statusCode?: number; error?: string };
  /** While its receiver fails every attempt: how, and since when (see ReceiverStates.holding). */
  failingNow?: { kind: FailingKind; since: string };
  /**
   * Deliveries recorded in the last 24 h, by status, the share delivered of those finished
   * (delivered or failed), the attempts' duration (p50 / p95 of the latest 1,000 at most),
   * and the same counts hour by hour, oldest first (24 of them, the current hour last).
   */
  last24h: StatusCounts & { successRate: number | null; latencyMs: { p50: number; p95: number; attempts: number } | null; hourly: (StatusCounts & { hour: string })[] };
}

/** Where a receiver stands now (see ReceiverState), and since when it has been failing, if it is. */
export interface ReceiverStanding {
  state: ReceiverState;
  failingFrom?: number;
}

const noDeliveries = (): StatusCounts => ({ delivered: 0, failed: 0, pending: 0, held: 0, skipped: 0 });

/** The value below which `share` of the sorted values lie (nearest rank). */
const percentile = (sorted: number[], share: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)]!;

/** Receivers' health as the API reads it, and its fresh start when a paused installation resumes. */
export class ReceiverHealthReads {
  constructor(private readonly db: Kysely<Schema>) {}

  /** A resume starts the count over: the failures before the pause do not pause it again at the next one. */
  async startOver(installationId: string): Promise<void> {
    await this.db.updateTable('installation_health').set({ consecutive_failures: 0, failing_since: null }).where('installation_id', '=', installationId).execute();
  }

  /**
   * Where the receivers stand (see ReceiverStanding) whose state was written at or after
   * `since` (ms since 1970), null ones included; without it, all that are not null (an
   * index of those alone).
   */
  async receiverStates(since?: number): Promise<Map<string, ReceiverStanding>> {
    const query = this.db.selectFrom('installation_health').select(['installation_id', 'failing_now', 'failing_now_from']);
    const rows = await (since === undefined ? query.where('failing_now', 'is not', null) : query.where('failing_now_at', '>=', since)).execute();
    return new Map(rows.map((row) => [row.installation_id, { state: row.failing_now as ReceiverState, ...(row.failing_now_from !== null && { failingFrom: Number(row.failing_now_from) }) }]));
  }

  /**
   * An installation's receiver health: its failures in a row, and its last day's deliveries
   * (one range of the installation's index, counted by hour and status in the database;
   * the latency from the attempts of its newest deliveries).
   */
  async read(installationId: string, now = Date.now()): Promise<ReceiverHealth> {
    const firstHour = Math.floor(now / HOUR_MS) - 23;
    const hourOf = sql<number>`created_at / ${sql.lit(HOUR_MS)}`;
    const [row, counts, durations] = await Promise.all([
      this.db.selectFrom('installation_health').selectAll().where('installation_id', '=', installationId).executeTakeFirst(),
      this.db
        .selectFrom('deliveries')
        .select(['status', hourOf.as('hour'), (eb) => eb.fn.countAll<number>().as('n')])
        .where('installation_id', '=', installationId)
        .where('created_at', '>=', firstHour * HOUR_MS)
        .groupBy(['status', hourOf])
        .execute(),
      this.db
        .selectFrom('deliveries')
        .innerJoin('attempts', 'attempts.delivery_id', 'deliveries.id')
        .select('attempts.duration_ms')
        .where('deliveries.installation_id', '=', installationId)
        .where('deliveries.created_at', '>=', now - DAY_MS)
        .orderBy('deliveries.created_at', 'desc')
        .limit(LATENCY_SAMPLE)
        .execute(),
    ]);
    const hourly = Array.from({ length: 24 }, (_, i) => ({ hour: new Date((firstHour + i) * HOUR_MS).toISOString(), ...noDeliveries() }));
    const total = noDeliveries();
    for (const { status, hour, n } of counts) {
      const bucket = hourly[Number(hour) - firstHour];
      if (!bucket || !(status in total)) continue;
      bucket[status as keyof StatusCounts] += Number(n);
      total[status as keyof StatusCounts] += Number(n);
    }
    const sorted = durations.map((d) => Number(d.duration_ms)).sort((a, b) => a - b);
    const time = (ms: number | null | undefined) => (ms === null || ms === undefined ? undefined : new Date(Number(ms)).toISOString());
    return {
      consecutiveFailures: row?.consecutive_failures ?? 0,
      ...(row?.failing_since != null && { failingSince: time(row.failing_since) }),
      ...(row?.last_success_at != null && { lastSuccessAt: time(row.last_success_at) }),
      ...(row?.last_failure_at != null && {
        lastFailure: { at: time(row.last_failure_at)!, ...(row.last_failure_status !== null && { statusCode: row.last_failure_status }), ...(row.last_failure_error !== null && { error: row.last_failure_error }) },
      }),
      ...(row && isFailing(row.failing_now) && row.failing_now_from != null && { failingNow: { kind: row.failing_now, since: time(row.failing_now_from)! } }),
      last24h: {
        ...total,
        successRate: total.delivered + total.failed ? total.delivered / (total.delivered + total.failed) : null,
        latencyMs: sorted.length ? { p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), attempts: sorted.length } : null,
        hourly,
      },
    };
  }
}
