import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PlatformPorts } from '../../src/net/platform-ports';
import { shardOf, shardWorkflowId } from '../../src/workflows/shard-contract';
import { createTestDatabase } from './postgres';

/** Delivery shards of a test platform's API and worker: events of different ids mostly land apart. */
export const DELIVERY_SHARDS = 4;

/**
 * An epoch that outlasts the test run (ShardLimits.epochMs): a test that watches one shard
 * workflow, or counts what it holds, sees one id for its whole run.
 */
export const WHOLE_RUN_EPOCH_MS = 2 ** 40;

/** The workflow an event's deliveries go to, with WHOLE_RUN_EPOCH_MS. */
export const wholeRunShardWorkflowId = (eventId: string): string => shardWorkflowId(shardOf(eventId, DELIVERY_SHARDS), Math.floor(Date.now() / WHOLE_RUN_EPOCH_MS));

/** `n` event ids that go to one delivery shard of a test platform (batches, lanes and runs are per shard). */
export function idsOfOneShard(prefix: string, n: number): string[] {
  const ids = [`evt_${prefix}_0`];
  for (let i = 1; ids.length < n; i++) if (shardOf(`evt_${prefix}_${i}`, DELIVERY_SHARDS) === shardOf(ids[0]!, DELIVERY_SHARDS)) ids.push(`evt_${prefix}_${i}`);
  return ids;
}

/** What the mocha global fixture hands every test process through the environment. */
export function testSettings(): { address: string; bundle: string; encryptionKey: string } {
  const address = process.env.TEST_TEMPORAL_ADDRESS;
  const bundle = process.env.TEST_WORKFLOW_BUNDLE;
  const encryptionKey = process.env.TEST_ENCRYPTION_KEY;
  if (!address || !bundle || !encryptionKey) throw new Error('the mocha global fixture (test/support/fixture) did not run');
  return { address, bundle, encryptionKey };
}

/**
 * The guard's view of the platform in a test process: the run's dev server (and every port
 * it opened) and the ports a test adds. Not this process's own tree: the tests' receivers
 * live in it too, and they stand for hosts outside the platform.
 */
export function testPlatformPorts(): PlatformPorts {
  const { address } = testSettings();
  return new PlatformPorts({ pids: [Number(process.env.TEST_TEMPORAL_PID)], ports: [Number(address.split(':').at(-1))] });
}

/** A fresh delivery log for one platform: an SQLite file, or a database on the run's PostgreSQL. */
export async function testDatabaseUrl(kind: 'sqlite' | 'postgres', label: string): Promise<string> {
  const name = `${label.replace(/[^a-z0-9]/gi, '_')}_${randomBytes(4).toString('hex')}`.toLowerCase();
  if (kind === 'sqlite') return `sqlite:${path.join(mkdtempSync(path.join(os.tmpdir(), 'platform-log-')), `${name}.db`)}`;
  const server = process.env.TEST_POSTGRES_URL;
  if (!server) throw new Error(`PostgreSQL is not available: ${process.env.TEST_POSTGRES_UNAVAILABLE ?? 'the fixture did not start it'}`);
  return createTestDatabase(server, name);
}
