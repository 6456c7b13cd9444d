import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDialectConfig } from 'kysely';
import pg from 'pg';
import { migrate } from './migrations';
import type { LogDialect, Schema } from './schema';
import type { Logger } from '../logger';
import { isPostgresUrl } from '../config';
import { startWalCheckpointer } from './wal-checkpointer';
import { makeDirectory } from '../make-directory';
import { seedPlannerStatistics } from './planner-statistics';


export interface LogDatabase {
  db: Kysely<Schema>;
  dialect: LogDialect;
  close(): Promise<void>;
}

/** bigint columns hold Unix milliseconds: read them as numbers, not strings. */
const pgTypes = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')),
};

/**
 * No connection to PostgreSQL could be had: refused, unreachable, not resolved, or none
 * opened or freed within CONNECT_TIMEOUT_MS. The socket's error alone (ECONNREFUSED…) does
 * not say which dependency it came from; this does.
 */
export class DatabaseUnreachableError extends Error {
  constructor(cause: unknown) {
    super(`the delivery log's database cannot be reached: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/**
 * How long a query waits for a connection, opened or freed, before it fails: a server that
 * drops packets (a partition, a host gone) would otherwise hold each request until its
 * client gave up. A wait for a free connection counts too: it is kept far above a query's time.
 */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * Whether an error says the log's database cannot serve for a moment (PostgreSQL ending,
 * refusing or not answering connections: a restart, a failover, too many clients; SQLite
 * locked past its busy timeout): the request may be retried as it is, so 503, not 500.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof DatabaseUnreachableError) return true;
  const code = (err as { code?: unknown } | null)?.code;
  // SQLSTATE class 08 (connection exception), 57P01-03 (shutdown, crash, starting), 53300 (too many connections).
  if (typeof code === 'string' && /^(08...|57P0[1-3]|53300|SQLITE_BUSY.*|SQLITE_LOCKED.*)$/.test(code)) return true;
  return err instanceof Error && err.message.startsWith('Connection terminated');
}

/** Distinct SQL texts kept prepared; lists of varying length make new texts, the oldest go. */
const STATEMENT_CACHE_SIZE = 256;

/**
 * Kysely prepares every query anew; SQLite's prepare costs as much as a small query, and
 * the log runs the same few statements thousands of times a second. Statements are reused
 * one at a time: a connection runs one query at a time and the log never streams.
 */
function withStatementCache(sqlite: SqliteDatabase.Database): SqliteDialectConfig['database'] {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = cache.get(sql);
      if (statement) {
        cache.delete(sql); // most recently used goes last
      } else {
        statement = sqlite.prepare(sql);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
}

/**
 * Opens the delivery log named by PLATFORM_DATABASE_URL (`postgres://…`, or `sqlite:<file>`
 * on the embedded default) and brings its schema up to date.
 */
/** The automatic checkpoint's threshold beside the checkpoint thread: reached only if that thread cannot run. */
const FALLBACK_CHECKPOINT_PAGES = 50_000;
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

export async function openLogDatabase(url: string, logger?: Logger): Promise<LogDatabase> {
  let database: LogDatabase;
  /** SQLite's: once its tables exist (PostgreSQL keeps statistics of its own). */
  let seedStatistics: (() => void) | undefined;
  if (isPostgresUrl(url)) {
    const pool = new pg.Pool({ connectionString: url, max: 10, types: pgTypes, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    // The server ending a connection (a restart, a failover, a proxy's idle timeout) is an
    // 'error' of it, which ends the process if nothing listens: the pool listens only while
    // it is idle (then drops it, and says so as its own 'error'), not while a query holds it
    // (the query fails: 503 at the API). So each connection is heard for its whole life.
    pool.on('connect', (client) => client.on('error', (err) => logger?.warn({ err: err.message }, 'delivery log: PostgreSQL ended a connection; the next query opens another')));
    pool.on('error', () => undefined); // said by the connection's own listener

    const connect = () => pool.connect().catch((err: unknown) => Promise.reject(new DatabaseUnreachableError(err)));
    const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: { connect, end: () => pool.end() } }) });
    database = { db, dialect: 'postgres', close: () => db.destroy() };
  } else {
    const file = url.replace(/^sqlite:/i, '');
    if (file !== ':memory:') makeDirectory(path.dirname(path.resolve(file)), 'PLATFORM_DATABASE_URL');
    let sqlite: SqliteDatabase.Database;
    try {
      sqlite = new SqliteDatabase(file);
    } catch (err) {
      throw new Error(`PLATFORM_DATABASE_URL: cannot open the SQLite file ${file} (${(err as Error).message})`, { cause: err });
    }
    // WAL: readers never wait for the writer, and API and worker processes may share the file.
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('busy_timeout = 10000');
    // A thread of the process checkpoints the WAL (see startWalCheckpointer); a commit does only if the WAL reaches 200 MB (4 KiB pages).
    const checkpointer = file === ':memory:' ? undefined : startWalCheckpointer(file, logger);
    if (checkpointer) sqlite.pragma(`wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES}`);
    // Once checkpointed, the WAL starts over at this size rather than keeping what it grew to.
    sqlite.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
    database = {
      db,
      dialect: 'sqlite',
      close: async () => {
        await checkpointer?.stop();
        await db.destroy();
      },
    };
    seedStatistics = () => seedPlannerStatistics(sqlite);
  }
  try {
    const applied = await migrate(database.db, database.dialect);
    // Which process of several starting together brought the schema up (the others say nothing).
    if (applied.length) logger?.info({ migrations: applied }, 'delivery log: schema migrated');
    seedStatistics?.();
  } catch (err) {
    await database.close();
    // Said at start-up: which setting to look at.
    throw new Error(`${(err as Error).message} (PLATFORM_DATABASE_URL${isPostgresUrl(url) ? '' : `: ${url}`})`, { cause: err });
  }
  return database;
}
