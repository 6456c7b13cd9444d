import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { isPostgresUrl } from '../src/config';
import type { AttemptsTable, DeliveriesTable } from '../src/delivery-log/schema';
import { Encryption } from '../src/encryption';
import { deliveryId, newEventId } from '../src/ids';
import { round } from './drive';

/** What (q) seeds: deliveries spread over `days` up to `now`, each of one installation of one organization, of one of its event types. */
export interface LogShape {
  deliveries: number;
  days: number;
  now: number;
  orgs: { org: string; installations: string[]; eventTypes: readonly string[] }[];
  url: string;
}

/** Deliveries of the first organization, picked at random while seeding: what (q) reads by id and by eventId. */
export interface Sample {
  ids: string[];
  eventIds: string[];
}

/** Rows a transaction: the log's writes, thousands at a time. */
const BATCH = 10_000;
/** SQLite's rows a statement (17 columns: under its 32,766 parameters). */
const SQLITE_ROWS_A_STATEMENT = 100;

const DELIVERY_COLUMNS = ['id', 'event_id', 'installation_id', 'organization_id', 'event_type', 'url', 'status', 'reason', 'body', 'attempts', 'replay_of', 'workflow_id', 'run_id', 'created_at', 'updated_at', 'completed_at', 'seq'] as const satisfies readonly (keyof DeliveriesTable)[];
const ATTEMPT_COLUMNS = ['delivery_id', 'attempt', 'started_at', 'duration_ms', 'url', 'status_code', 'error', 'error_message', 'response_body', 'next_delay_ms', 'workflow_id', 'run_id'] as const satisfies readonly (keyof AttemptsTable)[];
/** PostgreSQL's types of the columns that are not text (unnest takes typed arrays). */
const PG_TYPES: Record<string, string> = { attempts: 'integer', seq: 'integer', created_at: 'bigint', updated_at: 'bigint', completed_at: 'bigint', attempt: 'integer', started_at: 'bigint', duration_ms: 'integer', status_code: 'integer', next_delay_ms: 'integer' };

type Value = string | number | null;
interface Batch {
  deliveries: Value[][];
  attempts: Value[][];
}

/** A small seeded generator (mulberry32): both databases get the same mix. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The log's rows, oldest first (as they are written): 85% delivered (one attempt), 10%
 * failed (half after four 503s, half at a 400), 5% pending (half waiting for a retry after
 * a 503); bodies sealed as the platform seals them.
 */
function* batches(shape: LogShape, encryption: Encryption, sample: Sample): Generator<Batch> {
  const next = random(42);
  const installations = shape.orgs.flatMap(({ org, installations, eventTypes }) => installations.map((id) => ({ org, id, eventTypes })));
  const first = shape.orgs[0]!.org;
  const span = shape.days * 86_400_000;
  const start = shape.now - span;
  for (let done = 0; done < shape.deliveries; ) {
    const batch: Batch = { deliveries: [], attempts: [] };
    for (const end = Math.min(shape.deliveries, done + BATCH); done < end; done++) {
      const installation = installations[Math.floor(next() * installations.length)]!;
      const eventType = installation.eventTypes[Math.floor(next() * installation.eventTypes.length)]!;
      const eventId = newEventId();
      const id = deliveryId(eventId, installation.id);
      const createdAt = start + Math.floor((done / shape.deliveries) * span);
      const roll = next();
      const [status, answers] = roll < 0.85 ? ['delivered', [200]] : roll < 0.9 ? ['failed', [503, 503, 503, 503]] : roll < 0.95 ? ['failed', [400]] : roll < 0.975 ? ['pending', [503]] : ['pending', []];
      const epoch = Math.floor(createdAt / 5000);
      const run = answers.length ? [`delivery-shard/${done % 4}/${epoch}`, `run-${epoch}`] : [null, null];
      const last = createdAt + 2 ** answers.length * 1000;
      const body = encryption.seal(JSON.stringify({ eventId, type: eventType, installationId: installation.id, spaceId: 'space', revisionId: `rev-${done}` }));
      batch.deliveries.push([id, eventId, installation.id, installation.org, eventType, shape.url, status, null, body, answers.length, null, ...run, createdAt, answers.length ? last : createdAt, status === 'pending' ? null : last, 0]);
      answers.forEach((code, i) => batch.attempts.push([id, i + 1, createdAt + (2 ** i - 1) * 1000, 40, shape.url, code, null, null, code === 200 ? 'ok' : null, code === 503 && (i < 3 || status === 'pending') ? 2 ** i * 1000 : null, ...(run as string[])]));
      if (installation.org === first && next() < 0.005) {
        sample.ids.push(id);
        sample.eventIds.push(eventId);
      }
    }
    yield batch;
  }
}

/** Writes a batch in one transaction. */
interface Writer {
  write(batch: Batch): Promise<void>;
  /** What the database needs once loaded (PostgreSQL: what autovacuum does after a bulk load). */
  finish(): Promise<void>;
  close(): Promise<void>;
}

/** Prepared multi-row INSERTs, a transaction a batch. */
function sqliteWriter(file: string): Writer {
  const db = new SqliteDatabase(file);
  db.pragma('busy_timeout = 10000');
  // The indexes' pages in memory (1 GiB at most, not SQLite's 2 MiB): random ids made each insert read them from the file.
  db.pragma('cache_size = -1048576');
  const statements = new Map<string, SqliteDatabase.Statement>();
  const insert = (table: string, columns: readonly string[], rows: Value[][]) => {
    for (let at = 0; at < rows.length; at += SQLITE_ROWS_A_STATEMENT) {
      const part = rows.slice(at, at + SQLITE_ROWS_A_STATEMENT);
      const sql = `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${part.map(() => `(${columns.map(() => '?').join(', ')})`).join(', ')}`;
      if (!statements.has(sql)) statements.set(sql, db.prepare(sql));
      statements.get(sql)!.run(part.flat());
    }
  };
  const write = db.transaction((batch: Batch) => {
    insert('deliveries', DELIVERY_COLUMNS, batch.deliveries);
    insert('attempts', ATTEMPT_COLUMNS, batch.attempts);
  });
  return { write: async (batch) => write(batch), finish: async () => undefined, close: async () => void db.close() };
}

/** One INSERT … SELECT FROM unnest(…) a table and batch: a statement of 10,000 rows, in one transaction. */
async function postgresWriter(url: string): Promise<Writer> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const insert = async (table: string, columns: readonly string[], rows: Value[][]) => {
    const arrays = columns.map((_, i) => rows.map((row) => row[i]));
    await client.query(`INSERT INTO ${table} (${columns.join(', ')}) SELECT * FROM unnest(${columns.map((column, i) => `$${i + 1}::${PG_TYPES[column] ?? 'text'}[]`).join(', ')})`, arrays);
  };
  return {
    async write(batch) {
      await client.query('BEGIN');
      await insert('deliveries', DELIVERY_COLUMNS, batch.deliveries);
      await insert('attempts', ATTEMPT_COLUMNS, batch.attempts);
      await client.query('COMMIT');
    },
    finish: async () => void (await client.query('VACUUM ANALYZE deliveries, attempts')),
    close: () => client.end(),
  };
}

/** Seeds the log at `url` (migrated, empty of these rows) with `shape`, printing progress; answers what it took and a sample of the first organization's deliveries. */
export async function seedLog(url: string, encryptionKey: string, shape: LogShape, label: string) {
  const writer = isPostgresUrl(url) ? await postgresWriter(url) : sqliteWriter(url.replace(/^sqlite:/, ''));
  const sample: Sample = { ids: [], eventIds: [] };
  const started = performance.now();
  let [deliveries, attempts] = [0, 0];
  try {
    for (const batch of batches(shape, new Encryption(encryptionKey), sample)) {
      await writer.write(batch);
      deliveries += batch.deliveries.length;
      attempts += batch.attempts.length;
      if (deliveries % 100_000 < BATCH || deliveries === shape.deliveries) process.stderr.write(`  [q ${label} seed ${((performance.now() - started) / 1000).toFixed(0)}s] ${deliveries}/${shape.deliveries} deliveries, ${attempts} attempts\n`);
    }
    const inserted = (performance.now() - started) / 1000;
    await writer.finish();
    const seconds = (performance.now() - started) / 1000;
    return { deliveries, attempts, insertSeconds: round(inserted), seconds: round(seconds), deliveriesPerS: round(deliveries / inserted, 0), sample };
  } finally {
    await writer.close();
  }
}
