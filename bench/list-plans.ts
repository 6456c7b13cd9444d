import { CompiledQuery, DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, type Dialect } from 'kysely';
import { isPostgresUrl } from '../src/config';
import { DeliveryReads } from '../src/delivery-log/delivery-reads';
import type { Schema } from '../src/delivery-log/schema';
import type { DeliveryFilter, PageCursor } from '../src/delivery-log/types';
import { Encryption } from '../src/encryption';

export interface PlannedList {
  name: string;
  filter: DeliveryFilter;
  after?: PageCursor;
  /** An event's few deliveries are read by its index and then sorted: no range of the whole set. */
  sortsFewRows?: true;
}

export interface ListPlan {
  plan: string;
  /**
   * `index range`: one range of an index read in order (an event's few rows sorted);
   * `time order, filtered`: an index read newest first, rows of others skipped, ties of a
   * millisecond sorted (PostgreSQL's pick where the filter takes much of the log); else a
   * table scan or a sort of all that matches.
   */
  reads: 'index range' | 'time order, filtered' | 'NOT AN INDEX RANGE';
}

/** Compiles as the database's dialect does, runs nothing (answers no rows). */
const compilerOnly = (postgres: boolean): Dialect => ({
  createAdapter: () => (postgres ? new PostgresAdapter() : new SqliteAdapter()),
  createDriver: () => new DummyDriver(),
  createIntrospector: (db) => (postgres ? new PostgresIntrospector(db) : new SqliteIntrospector(db)),
  createQueryCompiler: () => (postgres ? new PostgresQueryCompiler() : new SqliteQueryCompiler()),
});

/**
 * The plan of the statement DeliveryReads.list runs for each filter, explained on `db` (the
 * store's own connection: SQLite's with the statistics the platform plans with). The
 * statement is captured from the list run once more on a Kysely that only compiles and logs.
 */
export async function listPlans(url: string, db: Kysely<Schema>, encryptionKey: string, lists: PlannedList[], pageSize: number): Promise<Record<string, ListPlan>> {
  const postgres = isPostgresUrl(url);
  const captured: CompiledQuery[] = [];
  const logging = new Kysely<Schema>({ dialect: compilerOnly(postgres), log: (event) => void captured.push(event.query) });
  try {
    const store = new DeliveryReads(logging, new Encryption(encryptionKey));
    const plans: Record<string, ListPlan> = {};
    for (const { name, filter, after, sortsFewRows } of lists) {
      captured.length = 0;
      await store.list(filter, pageSize, after);
      const query = captured.at(-1)!;
      const explained = await db.executeQuery<{ detail?: string; 'QUERY PLAN'?: string }>(CompiledQuery.raw(`${postgres ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'} ${query.sql}`, [...query.parameters]));
      // SQLite's steps, or PostgreSQL's nodes without their costs.
      const steps = explained.rows.map((row) => (row.detail ?? row['QUERY PLAN'] ?? '').replace(/\s*\(cost=[^)]*\)/, '').trim());
      const scans = steps.some((step) => /SCAN deliveries|Seq Scan/.test(step));
      const sorts = steps.some((step) => /^(->\s+)?Sort$|TEMP B-TREE FOR ORDER BY/.test(step));
      const sortsTies = steps.some((step) => /Incremental Sort|TEMP B-TREE FOR RIGHT PART/.test(step));
      const reads = scans || (sorts && !sortsFewRows) ? 'NOT AN INDEX RANGE' : sortsTies ? 'time order, filtered' : 'index range';
      plans[name] = { plan: steps.join(' | '), reads };
    }
    return plans;
  } finally {
    await logging.destroy();
  }
}
