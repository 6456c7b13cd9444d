import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStores, type PlatformStores } from '../src/platform/stores';
import { EventIdTakenError, IngestService } from '../src/ingest/ingest-service';
import type { ShardClient } from '../src/ingest/shard-client';
import { startTracing, type Tracing } from '../src/tracing';
import type { ShardItem } from '../src/workflows/shard-contract';
import { OtlpCollector } from './support/otlp-collector';

/**
 * One flush of ingest carrying several tenants' submissions of one eventId, on a real
 * delivery log (SQLite). The engine is a recording stand-in: what reaches it is the point.
 */
describe('an ingest flush shared by several submissions of one eventId', function () {
  let dir: string;
  let stores: PlatformStores;
  let engineAway = false;
  const handedOver: ShardItem[] = [];
  const engine = {
    shards: 1,
    shardOf: () => 0,
    epochOf: (at: number) => Math.floor(at / 5000),
    async enqueue(_shard: number, items: ShardItem[]) {
      if (engineAway) throw new Error('the engine does not answer');
      handedOver.push(...items);
    },
  } as unknown as ShardClient;
  let ingest: IngestService;

  const installation = (id: string, org: string) => ({
    id,
    integration: 'webhook',
    target: { org },
    status: 'active' as const,
    events: ['space_content_updated'],
    url: `https://${org}.example/hook`,
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
    revision: 1,
    signingSecrets: [],
    scopes: [],
    configuration: {},
  });
  const event = (org: string, eventId: string) => ({ type: 'space_content_updated' as const, organizationId: org, spaceId: 'space', revisionId: 'r', eventId });

  before(async function () {
    dir = mkdtempSync(path.join(os.tmpdir(), 'ingest-flush-'));
    stores = await openStores({ url: `sqlite:${path.join(dir, 'log.db')}`, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'default' });
    await stores.installations.save(installation('ins_a', 'org-a'));
    await stores.installations.save(installation('ins_b', 'org-b'));
    ingest = new IngestService(stores.events, stores.installations, engine);
  });
  after(async function () {
    await stores.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("hands a true repeat's pending deliveries over again, also when another organization's reuse of its eventId comes first in the flush", async function () {
    // The first ingest is recorded, but its hand-over fails: the API answered 503, and org-a retries.
    engineAway = true;
    await assert.rejects(ingest.ingest(event('org-a', 'evt_shared')));
    engineAway = false;
    handedOver.length = 0;
    // Submitted in one turn of the event loop: one flush, org-b's reuse first.
    const [reuse, retry] = await Promise.allSettled([ingest.ingest(event('org-b', 'evt_shared')), ingest.ingest(event('org-a', 'evt_shared'))]);
    assert.ok(reuse.status === 'rejected' && reuse.reason instanceof EventIdTakenError, 'the reuse is refused');
    assert.deepEqual(retry.status === 'fulfilled' && retry.value, { eventId: 'evt_shared', deliveries: ['evt_shared:ins_a'] });
    assert.deepEqual(handedOver.map((item) => item.id), ['evt_shared:ins_a'], 'the engine gets the pending delivery now, not from the sweep a minute later');
  });

  describe('with tracing on', function () {
    const collector = new OtlpCollector();
    let tracing: Tracing;
    before(async function () {
      await collector.start();
      tracing = startTracing({ url: collector.url, serviceName: 'ingest-flush-test' })!;
    });
    after(async function () {
      await tracing.shutdown();
      await collector.stop();
    });

    it('a new event carries the trace of the submission recorded, not of a refused one after it in the flush', async function () {
      handedOver.length = 0;
      const [first, reuse] = await Promise.allSettled([ingest.ingest(event('org-a', 'evt_traced')), ingest.ingest(event('org-b', 'evt_traced'))]);
      assert.equal(first.status, 'fulfilled');
      assert.ok(reuse.status === 'rejected' && reuse.reason instanceof EventIdTakenError);
      await tracing.processor.forceFlush();
      const ingestSpans = collector.spans.filter((span) => span.name === 'ingest event' && span.attributes['event.id'] === 'evt_traced');
      const recorded = ingestSpans.find((span) => span.attributes['organization.id'] === 'org-a');
      assert.ok(recorded, `the recorded submission's span, among ${ingestSpans.length}`);
      assert.equal(handedOver.length, 1);
      assert.equal(handedOver[0]!.trace?.split('-')[1], recorded.traceId, "the delivery continues org-a's trace");
    });
  });
});
