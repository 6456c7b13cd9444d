import type { Selectable, SelectQueryBuilder } from 'kysely';
import type { AttemptsTable, Schema } from './schema';
import type { AttemptRecord, NewDelivery } from './types';

/** Rows per multi-row statement: well under SQLite's 32,766 bound parameters. */
const CHUNK = 500;

export function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** A pending delivery as a shard is handed it again: to the epoch it was recorded in. */
export interface PendingDelivery extends Pick<NewDelivery, 'id' | 'eventId' | 'installationId'> {
  /** ms since 1970 */
  createdAt: number;
}

/**
 * An installation's line, first to last: the number its delivery took while it was recorded
 * (see EventRecords.linePlaces), then, among those recorded without one (0: before the
 * installation was ordered, or before line numbers), when and in which place of their flush.
 */
export function inLineOrder<O>(q: SelectQueryBuilder<Schema, 'deliveries', O>): SelectQueryBuilder<Schema, 'deliveries', O> {
  return q.orderBy('line_no').orderBy('created_at').orderBy('seq').orderBy('id');
}

/** A delivery's place in its installation's line (see inLineOrder). */
export type LinePlace = { lineNo: number; createdAt: number; seq: number; id: string };

export const PENDING_COLUMNS = ['id', 'event_id', 'installation_id', 'created_at'] as const;

export const pendingDelivery = (row: { id: string; event_id: string; installation_id: string; created_at: number }): PendingDelivery => ({ id: row.id, eventId: row.event_id, installationId: row.installation_id, createdAt: Number(row.created_at) });

export function attemptOf(row: Selectable<AttemptsTable>): AttemptRecord {
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

