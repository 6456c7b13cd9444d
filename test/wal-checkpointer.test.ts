import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { openLogDatabase } from '../src/delivery-log/database';
import { waitFor } from './support/platform';

describe('the delivery log’s WAL checkpoint thread (SQLite)', function () {
  it('copies what commits write into the database file, while the connection’s own checkpoint waits for 200 MB of WAL', async function () {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'wal-'));
    const file = path.join(dir, 'log.db');
    const database = await openLogDatabase(`sqlite:${file}`);
    try {
      const pragma = async (name: string) => Object.values((await sql<Record<string, number>>`pragma ${sql.raw(name)}`.execute(database.db)).rows[0]!)[0];
      assert.equal(await pragma('wal_autocheckpoint'), 50_000);
      const before = statSync(file).size;
      // About 2 MB of rows, under the connection's threshold: only the thread copies them over.
      for (let i = 0; i < 20; i++) {
        await database.db.insertInto('organizations').values(Array.from({ length: 50 }, (_, j) => ({ id: `org_${i}_${j}`, subdomain: `s${i}x${j}`, title: 'x'.repeat(2000), created_at: Date.now() }))).execute();
      }
      const grown = await waitFor(async () => (statSync(file).size > before + 1_000_000 ? statSync(file).size : undefined), 30_000, 'the database file to take the WAL’s pages');
      assert.ok(grown > before);
    } finally {
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
