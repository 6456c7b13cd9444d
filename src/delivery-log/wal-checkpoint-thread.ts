import { workerData } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';

/**
 * The WAL checkpoint thread (see wal-checkpointer.ts): a connection of its own to the log's
 * file, which copies what the WAL holds into the database file every `everyMs`.
 */
const { file, everyMs } = workerData as { file: string; everyMs: number };
const sqlite = new SqliteDatabase(file);
sqlite.pragma('busy_timeout = 10000');
setInterval(() => sqlite.pragma('wal_checkpoint(PASSIVE)'), everyMs);
