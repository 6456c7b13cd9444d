import type SqliteDatabase from 'better-sqlite3';

/**
 * What ANALYZE would write for a log of a million deliveries (sqlite_stat1: the rows, then
 * the rows per distinct prefix of each index's columns). Without statistics SQLite takes
 * any equality on an index's first column for about ten rows: it read `status = 'pending'`
 * on deliveries_pending_age as narrower than a batch's list of 25-100 ids, and each attempt
 * batch's read and write scanned every pending delivery (measured: 35-84 µs a delivery at
 * 20,000 pending, 14-16 µs with these; the cost grew with the backlog). With them, an id
 * list takes the primary key, an eventId its index, and the sweeps deliveries_pending_age.
 */
const TYPICAL_LOG: Record<string, Record<string, string>> = {
  deliveries: {
    sqlite_autoindex_deliveries_1: '1000000 1',
    deliveries_event: '1000000 2',
    deliveries_created: '1000000 2',
    deliveries_installation: '1000000 1000 2 1',
    deliveries_installation_status: '1000000 1000 250 2 1',
    deliveries_organization: '1000000 10000 2 1',
    deliveries_organization_status: '1000000 10000 2500 2 1',
    deliveries_organization_event_type: '1000000 10000 1000 2 1',
    deliveries_pending_age: '1000000 250000 100000 2 1',
  },
  events: { sqlite_autoindex_events_1: '1000000 1', events_created: '1000000 2' },
  attempts: { sqlite_autoindex_attempts_1: '1000000 1 1' },
};

/**
 * Gives the planner the shape of a typical log for each index it has no statistics of:
 * an operator's own ANALYZE, run on the real log, is kept. SQLite documents setting
 * sqlite_stat1 by hand for plans that do not depend on what the tables hold at the time.
 * An index a later migration added needs its figures too: without them SQLite took
 * deliveries_organization_event_type for a few rows an organization and sorted its whole
 * history for a list of it. Beside a table's typical figures it gets typical ones; beside
 * an operator's real ones, its own ANALYZE (one read of the index), as mixing the two
 * would mislead the planner as much.
 */
export function seedPlannerStatistics(sqlite: SqliteDatabase.Database): void {
  // Creates sqlite_stat1 (analyzing only the schema table: nothing to read).
  sqlite.exec('ANALYZE sqlite_schema');
  const analyzed = sqlite.prepare<[], { tbl: string; idx: string | null; stat: string }>('SELECT tbl, idx, stat FROM sqlite_stat1');
  const insert = sqlite.prepare('INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)');
  const toAnalyze: string[] = [];
  // Read and written under the write lock: an API and a worker starting on a new file together seed it once.
  sqlite.transaction(() => {
    const rows = analyzed.all();
    for (const [table, indexes] of Object.entries(TYPICAL_LOG)) {
      const own = rows.filter((row) => row.tbl === table);
      const typical = own.every((row) => row.idx !== null && indexes[row.idx] === row.stat);
      for (const [index, stat] of Object.entries(indexes)) {
        if (own.some((row) => row.idx === index)) continue;
        if (typical) insert.run(table, index, stat);
        else toAnalyze.push(index);
      }
    }
  }).immediate();
  for (const index of toAnalyze) sqlite.exec(`ANALYZE "${index}"`);
  // The planner reads sqlite_stat1 when it loads the schema, which may have been before
  // this process's seed or another's: this makes it read it again.
  sqlite.exec('ANALYZE sqlite_schema');
}
