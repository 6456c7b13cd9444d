import { randomBytes } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { IntegrationLogsTable, Schema } from './schema';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** What the code was doing: an endpoint call, an event, a render, its script's top level; or the platform's own word. */
export const LOG_KINDS = ['fetch', 'event', 'component', 'load', 'platform'] as const;
export type LogKind = (typeof LOG_KINDS)[number];

export interface NewLogLine {
  integration: string;
  version: number;
  installationId: string;
  organizationId: string;
  time: number;
  level: LogLevel;
  kind: LogKind;
  eventId?: string;
  traceId?: string;
  message: string;
}

export interface IntegrationLogLine extends Omit<NewLogLine, 'time'> {
  id: string;
  time: string;
}

export interface LogFilter {
  integration: string;
  installation?: string;
  /** This level and those above it. */
  level?: LogLevel;
  since?: number;
}

export interface LogCursor {
  time: number;
  id: string;
}

/** Rows a statement inserts or deletes at most (SQLite binds at most 32,766 values). */
const CHUNK = 500;

/**
 * Ids that order as the lines were written within one millisecond of one process: the
 * page cursor's tie-break after the time.
 */
let sequence = 0;
const lineId = (time: number) => `${time.toString(36).padStart(9, '0')}${(sequence++ % 36 ** 6).toString(36).padStart(6, '0')}${randomBytes(4).toString('hex')}`;

/** Integration code's log lines, in the delivery log's database and under its retention. */
export class IntegrationLogStore {
  constructor(private readonly db: Kysely<Schema>) {}

  /** One transaction: a group commit is written whole or not at all. */
  async append(lines: NewLogLine[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (let start = 0; start < lines.length; start += CHUNK) {
        const rows = lines.slice(start, start + CHUNK).map((line) => ({
          id: lineId(line.time),
          integration: line.integration,
          version: line.version,
          installation_id: line.installationId,
          organization_id: line.organizationId,
          time: line.time,
          level: line.level,
          kind: line.kind,
          event_id: line.eventId ?? null,
          trace_id: line.traceId ?? null,
          message: line.message,
        }));
        await trx.insertInto('integration_logs').values(rows).execute();
      }
    });
  }

  /** Deletes an installation's lines but its newest `keep`; answers how many went. */
  async trim(installationId: string, keep: number): Promise<number> {
    const newest = this.db.selectFrom('integration_logs').where('installation_id', '=', installationId).orderBy('time', 'desc').orderBy('id', 'desc');
    const oldestKept = await newest.select(['time', 'id']).limit(1).offset(keep - 1).executeTakeFirst();
    if (!oldestKept) return 0;
    const result = await this.db
      .deleteFrom('integration_logs')
      .where('installation_id', '=', installationId)
      .where((eb) => eb(eb.refTuple('time', 'id'), '<', eb.tuple(oldestKept.time, oldestKept.id)))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** A page of one integration's lines, newest first by (time, id), after the cursor. */
  async page(filter: LogFilter, pageSize: number, after?: LogCursor): Promise<{ items: IntegrationLogLine[]; next?: LogCursor }> {
    const levels = filter.level ? LOG_LEVELS.slice(LOG_LEVELS.indexOf(filter.level)) : undefined;
    const rows = await this.db
      .selectFrom('integration_logs')
      .selectAll()
      .$if(filter.installation === undefined, (q) => q.where('integration', '=', filter.integration))
      // An installation's own index; the integration is checked too, for an id of another's installation.
      .$if(filter.installation !== undefined, (q) => q.where('installation_id', '=', filter.installation!).where('integration', '=', filter.integration))
      .$if(levels !== undefined && levels.length < LOG_LEVELS.length, (q) => q.where('level', 'in', levels!))
      .$if(filter.since !== undefined, (q) => q.where('time', '>=', filter.since!))
      .$if(after !== undefined, (q) => q.where((eb) => eb(eb.refTuple('time', 'id'), '<', eb.tuple(after!.time, after!.id))))
      .orderBy('time', 'desc')
      .orderBy('id', 'desc')
      .limit(pageSize + 1)
      .execute();
    const last = rows.length > pageSize ? rows[pageSize - 1] : undefined;
    return { items: rows.slice(0, pageSize).map(lineOf), next: last && { time: Number(last.time), id: last.id } };
  }

  /** Deletes lines older than `before`, at most `limit` a step; answers how many went, 0 once none is left. */
  async purge(before: number, limit = 5000): Promise<number> {
    const ids = (await this.db.selectFrom('integration_logs').select('id').where('time', '<', before).limit(limit).execute()).map((row) => row.id);
    for (let start = 0; start < ids.length; start += CHUNK) await this.db.deleteFrom('integration_logs').where('id', 'in', ids.slice(start, start + CHUNK)).execute();
    return ids.length;
  }
}

function lineOf(row: Selectable<IntegrationLogsTable>): IntegrationLogLine {
  return {
    id: row.id,
    integration: row.integration,
    version: Number(row.version),
    installationId: row.installation_id,
    organizationId: row.organization_id,
    time: new Date(Number(row.time)).toISOString(),
    level: row.level as LogLevel,
    kind: row.kind as LogKind,
    ...(row.event_id !== null && { eventId: row.event_id }),
    ...(row.trace_id !== null && { traceId: row.trace_id }),
    message: row.message,
  };
}
