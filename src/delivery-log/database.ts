import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { migrate } from './migrations';
import type { Schema } from './schema';

export type LogDialect = 'sqlite' | 'postgres';

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
 * Opens the delivery log named by PLATFORM_DATABASE_URL (`postgres://…`, or `sqlite:<file>`
 * on the embedded default) and brings its schema up to date.
 */
export async function openLogDatabase(url: string): Promise<LogDatabase> {
  let database: LogDatabase;
  if (/^postgres(ql)?:\/\//.test(url)) {
    const pool = new pg.Pool({ connectionString: url, max: 10, types: pgTypes });
    const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
    database = { db, dialect: 'postgres', close: () => db.destroy() };
  } else {
    const file = url.replace(/^sqlite:/, '');
    if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    const sqlite = new SqliteDatabase(file);
    // WAL: readers never wait for the writer, and API and worker processes may share the file.
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('busy_timeout = 10000');
    const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: sqlite }) });
    database = { db, dialect: 'sqlite', close: () => db.destroy() };
  }
  try {
    await migrate(database.db);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}
