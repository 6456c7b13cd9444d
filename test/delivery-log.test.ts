import assert from 'node:assert/strict';
import { CompiledQuery, Kysely, sql, SqliteDialect, type KyselyPlugin } from 'kysely';
import pino from 'pino';
import SqliteDatabase from 'better-sqlite3';
import { isDatabaseUnavailable } from '../src/delivery-log/database';
import { AttemptRecords } from '../src/delivery-log/attempt-records';
import { EventRecords } from '../src/delivery-log/event-records';
import { Encryption } from '../src/encryption';
import { openStores, type PlatformStores } from '../src/platform/stores';
import { InstallationIndex } from '../src/installations/read-model';
import { quarantineCrossTenantDeliveries } from '../src/delivery-log/quarantine';
import { recordReceiverStates } from '../src/delivery-log/receiver-health';
import type { NewDelivery, NewEvent, PageCursor } from '../src/delivery-log/types';
import { testDatabaseUrl } from './support/settings';
import { waitFor } from './support/platform';

const run = { workflowId: 'delivery-shard/0', runId: 'run-1' };

function event(eventId: string, installations: string[], org = 'org-a'): NewEvent {
  return {
    eventId,
    organizationId: org,
    eventType: 'space_content_updated',
    deliveries: installations.map((installationId): NewDelivery => ({ id: `${eventId}:${installationId}`, eventId, installationId, organizationId: org, eventType: 'space_content_updated', body: `{"eventId":"${eventId}","secret-ish":"203.0.113.7"}`, url: 'https://example.com/hook' })),
  };
}

/** The same behaviour on both databases the log runs on. */
for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`the delivery log on ${kind}`, function () {
    let stores: PlatformStores;
    /** A replay recorded alone: its id, or undefined for an original not in the log. */
    const replayOf = async (original: Parameters<PlatformStores['events']['recordReplays']>[0][number]) => (await stores.events.recordReplays([original]))[0]?.id;

    before(async function () {
      stores = await openStores({ url: await testDatabaseUrl(kind, `log_${kind}`), encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test', temporalUiUrl: 'http://ui.example' });
    });
    after(() => stores?.close());

    it('keeps the first answer for an eventId: concurrent repeats race on the key, exactly one wins', async function () {
      const attempts = await Promise.all(Array.from({ length: 8 }, (_, i) => stores.events.recordEvents([event('evt_race', [`ins_${i}`])])));
      const records = attempts.map((records) => records.get('evt_race')!);
      assert.equal(records.filter((record) => record.fresh).length, 1);
      const winner = records.find((record) => record.fresh)!;
      for (const record of records) assert.deepEqual(record.deliveryIds, winner.deliveryIds);
      const stored = await stores.db.selectFrom('deliveries').select('id').where('event_id', '=', 'evt_race').execute();
      assert.deepEqual(stored.map((row) => row.id), winner.deliveryIds);
    });

    it('records an event that fans out to nobody, so its repeat answers the same', async function () {
      assert.equal((await stores.events.recordEvents([event('evt_nobody', [])])).get('evt_nobody')!.fresh, true);
      assert.deepEqual((await stores.events.recordEvents([event('evt_nobody', ['ins_late'])])).get('evt_nobody'), { eventId: 'evt_nobody', organizationId: 'org-a', eventType: 'space_content_updated', deliveryIds: [], fresh: false });
    });

    it('seals payload bodies at rest and opens them for attempts', async function () {
      await stores.events.recordEvents([event('evt_sealed', ['ins_1'])]);
      const raw = await stores.db.selectFrom('deliveries').select('body').where('id', '=', 'evt_sealed:ins_1').executeTakeFirstOrThrow();
      assert.ok(!raw.body.includes('203.0.113.7') && !raw.body.includes('evt_sealed'));
      assert.equal((await stores.attempts.toAttempt([{ id: 'evt_sealed:ins_1', attempt: 1 }])).get('evt_sealed:ins_1')!.body, '{"eventId":"evt_sealed","secret-ish":"203.0.113.7"}');
    });

    it('records attempts once per number, and a finished delivery never changes again', async function () {
      await stores.events.recordEvents([event('evt_done', ['ins_1'])]);
      const first = { attempt: 1, startedAt: new Date().toISOString(), durationMs: 12, url: 'https://example.com/hook', statusCode: 503, nextDelayMs: 1042 };
      await stores.attempts.recordOutcomes([{ id: 'evt_done:ins_1', status: 'pending', attempt: first }], run);
      await stores.attempts.recordOutcomes([{ id: 'evt_done:ins_1', status: 'pending', attempt: { ...first, statusCode: 500 } }], run);
      await stores.attempts.recordOutcomes([{ id: 'evt_done:ins_1', status: 'delivered', attempt: { ...first, attempt: 2, statusCode: 200, nextDelayMs: undefined } }], run);
      await stores.attempts.recordOutcomes([{ id: 'evt_done:ins_1', status: 'failed', reason: 'late writer' }], run);
      const delivery = (await stores.deliveries.get('evt_done:ins_1'))!;
      assert.equal(delivery.status, 'delivered');
      assert.deepEqual(delivery.attempts.map((a) => [a.attempt, a.statusCode, a.nextDelayMs]), [[1, 503, 1042], [2, 200, undefined]]);
      assert.deepEqual(delivery.workflow, { ...run, url: 'http://ui.example/namespaces/test/workflows/delivery-shard%2F0/run-1/history' });
      assert.equal(delivery.attemptCount, 2);
    });

    it('stores an answer with NUL bytes (a binary body), which PostgreSQL refuses in text, with the rest of its write', async function () {
      await stores.events.recordEvents([event('evt_nul', ['ins_1', 'ins_2'])]);
      const attempt = { attempt: 1, startedAt: new Date().toISOString(), durationMs: 3, url: 'https://example.com/hook' };
      await stores.attempts.recordOutcomes(
        [
          { id: 'evt_nul:ins_1', status: 'delivered', attempt: { ...attempt, statusCode: 200, responseBody: 'ok\u0000\u0001' } },
          { id: 'evt_nul:ins_2', status: 'pending', attempt: { ...attempt, error: 'network_error', errorMessage: 'reset\u0000', nextDelayMs: 1000 } },
        ],
        run,
      );
      assert.equal((await stores.deliveries.get('evt_nul:ins_1'))!.attempts[0]!.responseBody, 'ok\uFFFD\u0001');
      assert.equal((await stores.deliveries.get('evt_nul:ins_2'))!.attempts[0]!.errorMessage, 'reset\uFFFD');
    });

    it('never counts attempts back: a batch run again writes what it had recorded, and changes nothing; a final outcome of the last attempt still ends it', async function () {
      await stores.events.recordEvents([event('evt_count', ['ins_1'])]);
      const attempt = (n: number) => ({ attempt: n, startedAt: new Date().toISOString(), durationMs: 5, url: 'https://example.com/hook', statusCode: 503, nextDelayMs: 2000 });
      await stores.attempts.recordOutcomes([{ id: 'evt_count:ins_1', status: 'pending', attempt: attempt(1) }], run);
      await stores.attempts.recordOutcomes([{ id: 'evt_count:ins_1', status: 'pending', attempt: attempt(2) }], { workflowId: 'delivery-shard/0/7', runId: 'run-2' });
      // A late writer of attempt 1 (another workflow's batch that found it recorded).
      await stores.attempts.recordOutcomes([{ id: 'evt_count:ins_1', status: 'pending', attempt: attempt(1) }], run);
      const delivery = (await stores.deliveries.get('evt_count:ins_1'))!;
      assert.equal(delivery.attemptCount, 2);
      assert.equal(delivery.workflow?.workflowId, 'delivery-shard/0/7');
      const rerun = await stores.attempts.toAttempt([{ id: 'evt_count:ins_1', attempt: 2 }]);
      assert.equal(rerun.get('evt_count:ins_1')!.recorded?.attempt, 2, 'attempt 2 reads as recorded, not to be sent again');
      // A final outcome of the attempt counted last (another writer's) still ends the delivery.
      await stores.attempts.recordOutcomes([{ id: 'evt_count:ins_1', status: 'delivered', attempt: { ...attempt(2), statusCode: 200, nextDelayMs: undefined } }], run);
      assert.equal((await stores.deliveries.get('evt_count:ins_1'))!.status, 'delivered');
      // A batch run again once all its deliveries ended reads nothing to attempt (PostgreSQL refused its `in ()`).
      assert.equal((await stores.attempts.toAttempt([{ id: 'evt_count:ins_1', attempt: 3 }])).size, 0);
    });

    it('lists newest first with stable cursors across equal times, and filters', async function () {
      const now = Date.now() - 60_000;
      await stores.events.recordEvents(Array.from({ length: 7 }, (_, i) => event(`evt_list_${i}`, ['ins_list'], 'org-list')), now);
      await stores.events.recordEvents([event('evt_list_new', ['ins_list', 'ins_other'], 'org-list')], now + 1000);
      const seen: string[] = [];
      let after;
      do {
        const page = await stores.deliveries.list({ orgs: ['org-list'], installation: 'ins_list' }, 3, after);
        seen.push(...page.items.map((item) => item.id));
        after = page.next;
      } while (after);
      assert.equal(seen.length, 8);
      assert.equal(new Set(seen).size, 8);
      assert.equal(seen[0], 'evt_list_new:ins_list');
      assert.deepEqual((await stores.deliveries.list({ orgs: ['org-list'], eventId: 'evt_list_new' }, 10)).items.map((i) => i.id).sort(), ['evt_list_new:ins_list', 'evt_list_new:ins_other']);
      assert.deepEqual((await stores.deliveries.list({ orgs: ['org-list'], eventId: 'evt_list_new', installation: 'ins_other' }, 10)).items.map((i) => i.id), ['evt_list_new:ins_other']);
      assert.deepEqual((await stores.deliveries.list({ orgs: ['org-list'], eventId: 'evt_list_new', status: 'delivered' }, 10)).items, []);
      assert.deepEqual((await stores.deliveries.list({ orgs: ['org-elsewhere'], eventId: 'evt_list_new' }, 10)).items, [], 'another organization’s event is not listed');
      const byEvent = await stores.deliveries.list({ orgs: ['org-list'], eventId: 'evt_list_new' }, 1);
      assert.deepEqual([...byEvent.items, ...(await stores.deliveries.list({ orgs: ['org-list'], eventId: 'evt_list_new' }, 1, byEvent.next)).items].map((i) => i.id).sort(), ['evt_list_new:ins_list', 'evt_list_new:ins_other']);
      assert.equal((await stores.deliveries.list({ orgs: ['org-list'], since: now + 500 }, 10)).items.length, 2);
      assert.equal((await stores.deliveries.list({ orgs: ['org-list'], status: 'delivered' }, 10)).items.length, 0);
      assert.deepEqual((await stores.deliveries.list({ orgs: ['org-elsewhere'] }, 10)).items, []);
      // By event type: of the organization, of an installation, of an event.
      assert.equal((await stores.deliveries.list({ orgs: ['org-list'], eventType: 'space_content_updated' }, 10)).items.length, 9);
      assert.equal((await stores.deliveries.list({ orgs: ['org-list'], eventType: 'space_content_updated', installation: 'ins_list', status: 'pending' }, 10)).items.length, 8);
      assert.equal((await stores.deliveries.list({ orgs: ['org-list'], eventType: 'space_content_updated', eventId: 'evt_list_new' }, 10)).items.length, 2);
      for (const filter of [{}, { installation: 'ins_list' }, { eventId: 'evt_list_new' }]) assert.deepEqual((await stores.deliveries.list({ orgs: ['org-list'], eventType: 'site_view', ...filter }, 10)).items, [], JSON.stringify(filter));
    });

    it('serves lists by installation, by organization and by organization and status or event type from indexes, in index order', async function () {
      // The ranges DeliveryReads.list reads (by installation with a status, by organization, by
      // organization and status) and the stranded sweep's, each with the index it must use.
      const ranges: [string, string, RegExp][] = [
        [`installation_id = 'x' AND status = 'failed'`, 'created_at DESC, id DESC', /deliveries_installation_status/],
        [`organization_id = 'a'`, 'created_at DESC, id DESC', /deliveries_organization /i],
        [`organization_id = 'a' AND status = 'failed'`, 'created_at DESC, id DESC', /deliveries_organization_status/],
        [`organization_id = 'a' AND event_type = 'site_view'`, 'created_at DESC, id DESC', /deliveries_organization_event_type/],
        [`organization_id = 'a' AND event_type = 'site_view' AND (created_at, id) < (5, 'x')`, 'created_at DESC, id DESC', /deliveries_organization_event_type/],
        [`status = 'pending' AND attempts = 0 AND created_at < 1`, 'created_at, id', /deliveries_pending_age/],
        // After a page cursor: a row comparison, read as a range.
        [`organization_id = 'a' AND (created_at, id) < (5, 'x')`, 'created_at DESC, id DESC', /deliveries_organization /i],
        [`status = 'pending' AND attempts = 0 AND created_at < 9 AND (created_at, id) > (5, 'x')`, 'created_at, id', /deliveries_pending_age/],
        // An ordered installation's line (AttemptRecords.pendingInOrder), from its start and between two places.
        [`installation_id = 'x' AND status = 'pending'`, 'line_no, created_at, seq, id', /deliveries_line_no/],
        [`installation_id = 'x' AND status = 'pending' AND (line_no, created_at, seq, id) > (1, 5, 0, 'x') AND (line_no, created_at, seq, id) < (9, 5, 0, 'x')`, 'line_no, created_at, seq, id', /deliveries_line_no/],
      ];
      const plans = await Promise.all(
        ranges.map(async ([where, order]) => {
          if (kind === 'sqlite') return (await sql<{ detail: string }>`EXPLAIN QUERY PLAN SELECT id FROM deliveries WHERE ${sql.raw(where)} ORDER BY ${sql.raw(order)} LIMIT 51`.execute(stores.db)).rows.map((r) => r.detail).join(' ');
          await sql`SET enable_seqscan = off`.execute(stores.db);
          return (await sql<{ 'QUERY PLAN': string }>`EXPLAIN SELECT id FROM deliveries WHERE ${sql.raw(where)} ORDER BY ${sql.raw(order)} LIMIT 51`.execute(stores.db)).rows.map((r) => r['QUERY PLAN']).join(' ');
        }),
      );
      for (const [i, plan] of plans.entries()) {
        // A search of one range of the filter's own index, read in order: no scan, no sort.
        assert.match(plan, ranges[i]![2], plan);
        assert.doesNotMatch(plan, /SCAN deliveries|Seq Scan|TEMP B-TREE|Sort/, plan);
      }
    });

    it('finds stranded deliveries (pending, never attempted, old enough) oldest first, on from a cursor', async function () {
      const old = Date.now() - 120_000;
      await stores.events.recordEvents([event('evt_strand_a', ['ins_s'], 'org-strand')], old);
      await stores.events.recordEvents([event('evt_strand_b', ['ins_s'], 'org-strand'), event('evt_strand_c', ['ins_s'], 'org-strand')], old + 1);
      await stores.attempts.recordOutcomes([{ id: 'evt_strand_c:ins_s', status: 'pending', attempt: { attempt: 1, startedAt: new Date(old).toISOString(), durationMs: 1, url: 'https://e.example', statusCode: 500, nextDelayMs: 1000 } }], run);
      await stores.events.recordEvents([event('evt_strand_new', ['ins_s'], 'org-strand')]);
      const mine = (list: { id: string }[]) => list.map((d) => d.id).filter((id) => id.startsWith('evt_strand_'));
      const before = Date.now() - 60_000;
      const all = await stores.sweeps.stranded(before, 1000);
      assert.deepEqual(mine(all), ['evt_strand_a:ins_s', 'evt_strand_b:ins_s'], 'oldest first; an attempted one and a recent one are not stranded');
      const a = all.find((d) => d.id === 'evt_strand_a:ins_s')!;
      assert.deepEqual(mine(await stores.sweeps.stranded(before, 1000, { createdAt: a.createdAt, id: a.id })), ['evt_strand_b:ins_s']);
      assert.deepEqual(mine(await stores.sweeps.overdueRetries(before, 1000)), ['evt_strand_c:ins_s'], 'the attempted one is an overdue retry past the time given');
      assert.deepEqual(mine(await stores.sweeps.overdueRetries(old, 1000)), [], 'not before it');
    });

    it('keeps when a receiver began failing across its writes, reads the states written since a time, and finds installations not paused with held deliveries', async function () {
      const t0 = Date.now() - 120_000;
      const installation = (id: string, status: 'active' | 'paused' | 'deleted') => ({ id, integration: 'webhook', target: { org: 'org-hold' }, status, events: ['space_content_updated'], scopes: [], configuration: {}, url: 'https://e.example/', createdAt: new Date(t0).toISOString(), updatedAt: new Date(t0).toISOString(), revision: 1, signingSecrets: [] });
      for (const [id, status] of [['ins_hold_failing', 'active'], ['ins_hold_back', 'active'], ['ins_hold_paused', 'paused'], ['ins_hold_deleted', 'deleted']] as const) await stores.installations.save(installation(id, status));
      // Failing on (fast, then slow) keeps when it began; answering clears it.
      // Failing on, or first written, is no recovery; one that was failing (whoever wrote it) and answers now is.
      assert.deepEqual(await recordReceiverStates(stores.db, new Map(), new Map([['ins_hold_failing', 'fast'], ['ins_hold_back', 'slow'], ['ins_hold_paused', 'fast'], ['ins_hold_deleted', 'fast'], ['ins_hold_new', 'prompt']]), t0), []);
      assert.deepEqual(await recordReceiverStates(stores.db, new Map(), new Map([['ins_hold_failing', 'slow'], ['ins_hold_back', 'prompt']]), t0 + 1000), ['ins_hold_back']);
      assert.deepEqual(await recordReceiverStates(stores.db, new Map(), new Map([['ins_hold_back', 'prompt']]), t0 + 1000), [], 'answering on');
      // The installations asked about only.
      assert.deepEqual((await stores.sweeps.heldOfActive(Date.now() + 1, 1000, [])).length, 0);
      const since = await stores.health.receiverStates(t0 + 500);
      assert.deepEqual(since.get('ins_hold_failing'), { state: 'slow', failingFrom: t0 });
      assert.deepEqual(since.get('ins_hold_back'), { state: 'prompt' });
      assert.equal(since.get('ins_hold_paused'), undefined, 'written before the time given');
      assert.deepEqual((await stores.health.receiverStates()).get('ins_hold_paused'), { state: 'fast', failingFrom: t0 });

      const held = (eventId: string, installationId: string): NewEvent => ({ ...event(eventId, []), organizationId: 'org-hold', deliveries: event(eventId, [installationId], 'org-hold').deliveries.map((delivery) => ({ ...delivery, held: true as const, heldReason: 'receiver_failing' })) });
      await stores.events.recordEvents([held('evt_hold_1', 'ins_hold_failing'), held('evt_hold_2', 'ins_hold_back'), held('evt_hold_3', 'ins_hold_paused'), held('evt_hold_6', 'ins_hold_deleted')], t0);
      await stores.events.recordEvents([held('evt_hold_4', 'ins_hold_failing')], t0 + 10);
      await stores.events.recordEvents([held('evt_hold_5', 'ins_hold_back')], Date.now());
      const mine = (await stores.sweeps.heldOfActive(Date.now() - 60_000, 1000)).filter((found) => found.installationId.startsWith('ins_hold_')).sort((a, b) => (a.installationId < b.installationId ? -1 : 1));
      assert.deepEqual(mine, [
        { installationId: 'ins_hold_back', organizationId: 'org-hold', oldest: t0, failing: false },
        { installationId: 'ins_hold_deleted', organizationId: 'org-hold', oldest: t0, failing: false },
        { installationId: 'ins_hold_failing', organizationId: 'org-hold', oldest: t0, failing: true },
      ]);
      assert.deepEqual((await stores.sweeps.heldOfActive(Date.now() + 1, 1000, ['ins_hold_back', 'ins_hold_paused'])).map((found) => [found.installationId, found.oldest]), [['ins_hold_back', t0]], 'of those asked about, the paused one left out');
      assert.equal((await stores.deliveries.get('evt_hold_1:ins_hold_failing'))?.heldReason, 'receiver_failing');
      const tried = await stores.sweeps.releaseOldestHeld('ins_hold_failing');
      assert.equal(tried?.id, 'evt_hold_1:ins_hold_failing', 'its oldest');
      assert.equal((await stores.deliveries.get('evt_hold_1:ins_hold_failing'))?.status, 'pending');
      assert.equal((await stores.deliveries.get('evt_hold_4:ins_hold_failing'))?.status, 'held');
      assert.equal((await stores.sweeps.releaseOldestHeld('ins_hold_failing'))?.id, 'evt_hold_4:ins_hold_failing');
      assert.equal(await stores.sweeps.releaseOldestHeld('ins_hold_failing'), undefined, 'nothing left held');
      // The purge's test counts what deleted installations leave behind: none of this one's.
      await stores.db.deleteFrom('installation_health').where('installation_id', 'in', ['ins_hold_deleted', 'ins_hold_new']).execute();
    });

    it('lists the deliveries of several organizations newest first, a page at a time, each once', async function () {
      const base = Date.now() - 60_000;
      // Interleaved in time, and two created in the same millisecond in different organizations.
      const times = [0, 1, 2, 3, 3, 4, 5];
      for (const [i, at] of times.entries()) await stores.events.recordEvents([event(`evt_multi_${i}`, ['ins_multi'], i % 2 ? 'org-multi-odd' : 'org-multi-even')], base + at);
      const expected = times.map((at, i) => ({ at, id: `evt_multi_${i}:ins_multi` })).sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1)).map((entry) => entry.id);
      // Two organizations, and the same two among 601 (merged in groups: SQLite takes 500 arms to a compound SELECT).
      for (const orgs of [['org-multi-even', 'org-multi-odd'], [...Array.from({ length: 599 }, (_, i) => `org-multi-none-${i}`), 'org-multi-even', 'org-multi-odd']]) {
        const seen: string[] = [];
        let after: PageCursor | undefined;
        do {
          const page = await stores.deliveries.list({ orgs }, 2, after);
          seen.push(...page.items.map((item) => item.id));
          after = page.next;
        } while (after);
        assert.deepEqual(seen, expected, `${orgs.length} organizations`);
      }
    });

    it('keeps the newest revision of an installation and seals its secrets', async function () {
      const base = { id: 'ins_rev', integration: 'webhook', target: { org: 'org-rev', space: 's1' }, status: 'active' as const, events: ['space_content_updated'], scopes: [], configuration: { oauth_credentials: { access_token: 'tok_secret' } }, url: 'https://a.example/', createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), signingSecrets: [{ secret: 'whsec_top_secret', createdAt: new Date().toISOString() }] };
      await stores.installations.save({ ...base, revision: 2, url: 'https://new.example/' });
      await stores.installations.save({ ...base, revision: 1, url: 'https://old.example/', status: 'paused' });
      const [found] = await stores.installations.of(['org-rev']);
      assert.equal(found!.url, 'https://new.example/');
      assert.equal(found!.status, 'active');
      const raw = await stores.db.selectFrom('installations').select('secrets').where('id', '=', 'ins_rev').executeTakeFirstOrThrow();
      assert.ok(!raw.secrets.includes('top_secret'));
      const rawConfiguration = await stores.db.selectFrom('installations').select('configuration').where('id', '=', 'ins_rev').executeTakeFirstOrThrow();
      assert.ok(!rawConfiguration.configuration.includes('tok_secret'));
      const target = (await stores.installations.getMany(['ins_rev'])).get('ins_rev')!;
      assert.equal(target.signingSecrets[0]!.secret, 'whsec_top_secret');
      assert.deepEqual(target.configuration, { oauth_credentials: { access_token: 'tok_secret' } });
    });

    it('purges what is older than the retention, in bounded steps, but no pending delivery, nor an event record while a delivery of it is left', async function () {
      const old = Date.now() - 40 * 86_400_000;
      await stores.events.recordEvents([event('evt_old_1', ['ins_p']), event('evt_old_pending', ['ins_p']), event('evt_old_replayed', ['ins_p']), event('evt_old_none', [])], old);
      const delivered = (id: string) => ({ id, status: 'delivered' as const, attempt: { attempt: 1, startedAt: new Date(old).toISOString(), durationMs: 1, url: 'https://e.example', statusCode: 200 } });
      await stores.attempts.recordOutcomes([delivered('evt_old_1:ins_p'), delivered('evt_old_replayed:ins_p')], run);
      assert.equal(await replayOf({ id: 'evt_old_replayed:ins_p', eventId: 'evt_old_replayed', installationId: 'ins_p', organizationId: 'org-a', eventType: 'space_content_updated' }), 'evt_old_replayed:ins_p:replay-1');
      await stores.events.recordEvents([event('evt_recent', ['ins_p'])]);
      const before = Date.now() - 30 * 86_400_000;
      // A step takes at most `limit` rows of each table: a delivery (with its attempt) and an event record.
      const steps: number[] = [];
      for (let removed = Infinity; removed > 0; ) steps.push((removed = await stores.sweeps.purge(before, 1)));
      assert.ok(steps.every((removed) => removed <= 2), `steps ${steps}`);
      assert.equal(steps.reduce((sum, removed) => sum + removed, 0), 4, 'two final deliveries, and the records of the two events with none left');
      assert.equal(await stores.deliveries.get('evt_old_1:ins_p'), undefined);
      assert.equal((await stores.db.selectFrom('attempts').select('delivery_id').where('delivery_id', '=', 'evt_old_1:ins_p').execute()).length, 0);
      assert.equal(await stores.deliveries.get('evt_old_replayed:ins_p'), undefined);
      assert.equal((await stores.deliveries.get('evt_old_pending:ins_p'))?.status, 'pending', 'accepted, not yet final: kept');
      assert.ok(await stores.deliveries.get('evt_old_replayed:ins_p:replay-1'));
      assert.ok(await stores.deliveries.get('evt_recent:ins_p'));
      const fresh = await stores.events.recordEvents(['evt_old_1', 'evt_old_none', 'evt_old_pending', 'evt_old_replayed'].map((id) => event(id, [])));
      assert.deepEqual(['evt_old_1', 'evt_old_none', 'evt_old_pending', 'evt_old_replayed'].map((id) => fresh.get(id)!.fresh), [true, true, false, false], 'an eventId stays taken while a delivery of it is left');
    });

    it('purges operations finished before the retention, and the health, send slots and line counters of deleted installations, and nothing else of theirs', async function () {
      const old = Date.now() - 40 * 86_400_000;
      const before = Date.now() - 30 * 86_400_000;
      const request = (id: string) => ({ id, kind: 'replay_failed' as const, organizationId: 'org-op', installationId: 'ins_op_live' });
      for (const id of ['op_old_done', 'op_old_running', 'op_recent_done']) await stores.operations.begin(request(id), 1, old);
      await stores.operations.finish('op_old_done', 'done', old);
      await stores.operations.finish('op_recent_done', 'done');
      const installation = (id: string, status: 'active' | 'deleted') => ({ id, integration: 'webhook', target: { org: 'org-op' }, status, revision: 1, events: ['space_content_updated'], scopes: [], configuration: { ordered: true }, url: 'https://a.example/', createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), signingSecrets: [] });
      await stores.installations.save(installation('ins_op_live', 'active'));
      await stores.installations.save(installation('ins_op_gone', 'deleted'));
      await stores.events.recordEvents([event('evt_op_1', ['ins_op_live', 'ins_op_gone'])]);
      const failed = (id: string) => ({ id, status: 'failed' as const, attempt: { attempt: 1, startedAt: new Date().toISOString(), durationMs: 1, url: 'https://a.example/', statusCode: 400 } });
      await stores.attempts.recordOutcomes([failed('evt_op_1:ins_op_live'), failed('evt_op_1:ins_op_gone')], run);
      for (const id of ['ins_op_live', 'ins_op_gone']) await stores.pace.reserve(id, 100, 1000);
      const ours = (rows: { id: string }[]) => rows.map((row) => row.id).filter((id) => /(^|_)op_/.test(id)).sort();
      assert.deepEqual(ours(await stores.db.selectFrom('installation_lines').select('installation_id as id').execute()), ['ins_op_gone', 'ins_op_live'], 'both ordered: each took a place');
      while ((await stores.sweeps.purge(before)) > 0);
      assert.deepEqual(ours(await stores.db.selectFrom('operations').select('id').execute()), ['op_old_running', 'op_recent_done'], 'a running operation stays, whatever its age');
      assert.deepEqual(ours(await stores.db.selectFrom('installation_health').select('installation_id as id').execute()), ['ins_op_live']);
      assert.deepEqual(ours(await stores.db.selectFrom('installation_pace').select('installation_id as id').execute()), ['ins_op_live']);
      assert.deepEqual(ours(await stores.db.selectFrom('installation_lines').select('installation_id as id').execute()), ['ins_op_live']);
      assert.equal((await stores.deliveries.get('evt_op_1:ins_op_gone'))?.status, 'failed', 'its recent deliveries stay until the retention');
    });

    it('records an operation begun again under its id afresh once it ended unfinished (failed, cancelled), keeps a running one’s first record, and finishes only the record it read', async function () {
      const request = { id: 'op_release_ins_again_held1', kind: 'release_held' as const, organizationId: 'org-op', installationId: 'ins_again', held: 'deliver' as const };
      assert.equal(await stores.operations.begin(request, 10, 1000), 1000);
      await stores.operations.advance(request.id, 4, 0);
      assert.equal(await stores.operations.begin(request, 7, 2000), 1000, 'running: its activity retried keeps the first');
      assert.equal(await stores.operations.finish(request.id, 'failed', Date.now(), 999), false, 'not the record begun then');
      assert.equal(await stores.operations.finish(request.id, 'failed', Date.now(), 1000), true);
      assert.equal(await stores.operations.finish(request.id, 'done'), false, 'no longer running: stays failed');
      assert.deepEqual((await stores.operations.running(100)).filter((operation) => operation.id === request.id), []);
      assert.equal(await stores.operations.begin(request, 6, 3000), 3000);
      const again = await stores.operations.get(request.id);
      assert.deepEqual([again?.status, again?.total, again?.done, again?.finishedAt], ['running', 6, 0, undefined]);
      assert.deepEqual((await stores.operations.running(100)).filter((operation) => operation.id === request.id).map((operation) => operation.createdAt), [3000]);
      assert.equal(await stores.operations.finish(request.id, 'cancelled'), true);
      assert.equal(await stores.operations.begin(request, 5, 4000), 4000, 'cancelled, then begun again: afresh too');
    });

    it('keeps a pace whose interval is no whole millisecond: 300 slots at 300/s span 996.7 ms (whole ms made them 897), and past the horizon a slot is asked for later', async function () {
      const now = Date.now();
      const slots = [];
      for (let i = 0; i < 300; i++) slots.push(await stores.pace.reserve('ins_pace_300', 1000 / 300, 10_000, now));
      const at = slots.map((slot) => ('sendAt' in slot ? slot.sendAt : NaN));
      assert.equal(at[0], now);
      assert.ok(Math.abs(at[299]! - now - (299 * 1000) / 300) < 0.5, `the 300th slot ${at[299]! - now} ms after the first`);
      // Slowed by a 429 (held 10 ms): twice the interval from the hold's end.
      await stores.pace.slowDown('ins_pace_300', 10, now);
      const slowed = await Promise.all([stores.pace.reserve('ins_pace_300', 1000 / 300, 10_000, now + 1000), stores.pace.reserve('ins_pace_300', 1000 / 300, 10_000, now + 1000)]);
      const [first, second] = slowed.map((slot) => ('sendAt' in slot ? slot.sendAt : NaN)).sort((a, b) => a - b);
      assert.ok(Math.abs(second! - first! - 2000 / 300) < 0.01, `slowed slots ${second! - first!} ms apart`);
      // The next slot is over 3 s out: past a 1 s horizon, none is taken, and the attempt is asked for again then.
      const later = await stores.pace.reserve('ins_pace_300', 1000 / 300, 1000, now - 3000);
      assert.ok('laterMs' in later && later.laterMs > 2000, JSON.stringify(later));
    });

    it('counts a receiver’s failures in a row with the outcomes that finish them: once, whatever is written again; a success starts over', async function () {
      await stores.events.recordEvents([event('evt_h1', ['ins_h']), event('evt_h2', ['ins_h']), event('evt_h3', ['ins_h'])]);
      const outcome = (id: string, statusCode: number) => ({ id, status: statusCode === 200 ? ('delivered' as const) : ('failed' as const), attempt: { attempt: 1, startedAt: new Date().toISOString(), durationMs: 1, url: 'https://e.example', statusCode } });
      const first = await stores.attempts.recordOutcomes([outcome('evt_h1:ins_h', 400), outcome('evt_h2:ins_h', 410)], run);
      assert.deepEqual(first.map((change) => [change.installationId, change.consecutiveFailures, change.gone]), [['ins_h', 2, true]]);
      assert.deepEqual(await stores.attempts.recordOutcomes([outcome('evt_h1:ins_h', 400)], run), [], 'written again: finished already, not counted again');
      assert.equal((await stores.health.read('ins_h')).consecutiveFailures, 2);
      await stores.attempts.recordOutcomes([outcome('evt_h3:ins_h', 200)], run);
      const health = await stores.health.read('ins_h');
      assert.deepEqual([health.consecutiveFailures, health.failingSince, health.lastFailure?.statusCode], [0, undefined, 410]);
      assert.ok(health.lastSuccessAt);
      const { hourly, ...day } = health.last24h;
      assert.deepEqual(day, { delivered: 1, failed: 2, pending: 0, held: 0, skipped: 0, successRate: 1 / 3, latencyMs: { p50: 1, p95: 1, attempts: 3 } });
      assert.equal(hourly.length, 24);
      // In this hour's bucket, the last (the one before if the hour turned since they were recorded).
      const busy = hourly.filter((hour) => hour.delivered + hour.failed > 0);
      assert.deepEqual(busy.map(({ delivered, failed }) => [delivered, failed]), [[1, 2]]);
      assert.ok(hourly.indexOf(busy[0]!) >= 22);
    });

    it('claims an attempt only while its delivery is pending and has not counted it: not one another run made and recorded since', async function () {
      await stores.events.recordEvents([event('evt_claim', ['ins_c'])]);
      const id = 'evt_claim:ins_c';
      const claim = async (attempt: number) => (await stores.attempts.recordStarted([{ deliveryId: id, attempt, startedAt: new Date().toISOString(), url: 'https://e.example' }], run)).size;
      const record = (attempt: number, statusCode: number) => stores.attempts.recordOutcomes([{ id, status: statusCode === 200 ? 'delivered' : 'pending', attempt: { attempt, startedAt: new Date().toISOString(), durationMs: 1, url: 'https://e.example', statusCode, ...(statusCode !== 200 && { nextDelayMs: 1000 }) } }], run);
      assert.equal(await claim(1), 1);
      await record(1, 503);
      assert.equal(await claim(1), 0, 'made and recorded: not claimed again');
      assert.equal(await claim(2), 1);
      await record(2, 200);
      const claims = await stores.db.selectFrom('attempts_in_flight').select('attempt').where('delivery_id', '=', id).execute();
      assert.deepEqual(claims.map((row) => Number(row.attempt)), [2], 'the recorded attempt keeps its claim; the earlier one is gone');
      assert.equal(await claim(3), 0, 'delivered: nothing more to claim');
      assert.equal((await stores.attempts.recordStarted([{ deliveryId: 'evt_claim:ins_absent', attempt: 1, startedAt: new Date().toISOString(), url: 'https://e.example' }], run)).size, 0, 'not in the log');
    });

    it('numbers replays on from the last one recorded, of the original or of a replay, and answers nothing for an original purged meanwhile', async function () {
      await stores.events.recordEvents([event('evt_rn', ['ins_rn'])]);
      const original = { id: 'evt_rn:ins_rn', eventId: 'evt_rn', installationId: 'ins_rn', organizationId: 'org-a', eventType: 'space_content_updated' };
      const first = await Promise.all([1, 2, 3].map(() => replayOf(original)));
      assert.deepEqual([...first].sort(), ['evt_rn:ins_rn:replay-1', 'evt_rn:ins_rn:replay-2', 'evt_rn:ins_rn:replay-3'], 'concurrent replays each get a number of their own');
      assert.equal(await replayOf({ ...original, id: 'evt_rn:ins_rn:replay-2' }), 'evt_rn:ins_rn:replay-4');
      assert.equal((await stores.deliveries.get('evt_rn:ins_rn:replay-4'))?.replayOf, 'evt_rn:ins_rn:replay-2');
      assert.equal(await replayOf({ ...original, id: 'evt_rn:ins_gone' }), undefined);
    });

    it('keeps an ordered installation’s line in the order its recordings commit, whatever the recorders’ clocks: one that waits behind another takes the next place', async function () {
      const t0 = Date.now();
      const installation = (id: string, configuration: Record<string, unknown>) => ({ id, integration: 'webhook', target: { org: 'org-a' }, status: 'active' as const, events: ['space_content_updated'], scopes: [], configuration, url: 'https://e.example/', createdAt: new Date(t0).toISOString(), updatedAt: new Date(t0).toISOString(), revision: 1, signingSecrets: [] });
      const line = async (installationId: string) => (await stores.attempts.pendingInOrder(installationId, 100)).map((delivery) => delivery.id);
      // Recorded before the installation was ordered: no number, so first.
      await stores.events.recordEvents([event('evt_l0', ['ins_line'])], t0 + 9000);
      await stores.installations.save(installation('ins_line', { ordered: true }));
      await stores.installations.save(installation('ins_free', {}));
      // A recorder whose clock is ahead, then one whose clock is behind (two API processes): the line goes by what committed first.
      await stores.events.recordEvents([event('evt_l1', ['ins_line', 'ins_free'])], t0 + 5000);
      await stores.events.recordEvents([event('evt_l2', ['ins_line', 'ins_free'])], t0);
      assert.deepEqual(await line('ins_line'), ['evt_l0:ins_line', 'evt_l1:ins_line', 'evt_l2:ins_line']);
      assert.deepEqual(await line('ins_free'), ['evt_l2:ins_free', 'evt_l1:ins_free'], 'not ordered: no number taken, by time as before');

      // A replay (an operation's page) whose transaction is still open when another recording of the line begins.
      let commit!: () => void;
      const open = new Promise<void>((resolve) => (commit = resolve));
      let placed!: () => void;
      const taken = new Promise<void>((resolve) => (placed = resolve));
      const replaying = stores.events.recordReplays([{ id: 'evt_l1:ins_line', eventId: 'evt_l1', installationId: 'ins_line', organizationId: 'org-a', eventType: 'space_content_updated' }], t0 + 7000, async () => (placed(), open));
      await taken;
      const later = stores.events.recordEvents([event('evt_l3', ['ins_line'])], t0 - 1000);
      try {
        // PostgreSQL: it waits on the line's counter, which the open transaction holds, and nothing of it is seen meanwhile, so no line sends it first. (SQLite: the one connection waits.)
        if (kind === 'postgres') {
          await waitFor(async () => Number((await sql<{ waiting: string }>`select count(*) as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%installation_lines%'`.execute(stores.db)).rows[0]!.waiting) >= 1 || undefined, 30_000, 'the second recording waiting on the line');
          assert.deepEqual(await line('ins_line'), ['evt_l0:ins_line', 'evt_l1:ins_line', 'evt_l2:ins_line']);
        }
      } finally {
        commit();
      }
      await Promise.all([replaying, later]);
      assert.deepEqual(await line('ins_line'), ['evt_l0:ins_line', 'evt_l1:ins_line', 'evt_l2:ins_line', 'evt_l1:ins_line:replay-1', 'evt_l3:ins_line']);
      const numbers = await stores.db.selectFrom('deliveries').select(['id', 'line_no']).where('installation_id', 'in', ['ins_line', 'ins_free']).orderBy('id').execute();
      assert.deepEqual(Object.fromEntries(numbers.map((row) => [row.id, Number(row.line_no)])), { 'evt_l0:ins_line': 0, 'evt_l1:ins_free': 0, 'evt_l1:ins_line': 1, 'evt_l1:ins_line:replay-1': 3, 'evt_l2:ins_free': 0, 'evt_l2:ins_line': 2, 'evt_l3:ins_line': 4 });
    });

    it('quarantines deliveries recorded for another organization than their event’s (before the fan-out fix), with their replays and attempts', async function () {
      // As the faulty fan-out recorded them: org-a's event, delivered to org-b's installation under org-b.
      const leaked = event('evt_leaked', ['ins_a1']);
      leaked.deliveries.push({ ...event('evt_leaked', ['ins_b1'], 'org-b').deliveries[0]! });
      await stores.events.recordEvents([leaked, event('evt_own_b', ['ins_b1'], 'org-b')]);
      await stores.attempts.recordOutcomes([{ id: 'evt_leaked:ins_b1', status: 'delivered', attempt: { attempt: 1, startedAt: new Date().toISOString(), durationMs: 3, url: 'https://example.com/hook', statusCode: 200 } }], run);
      assert.equal(await replayOf({ id: 'evt_leaked:ins_b1', eventId: 'evt_leaked', installationId: 'ins_b1', organizationId: 'org-b', eventType: 'space_content_updated' }), 'evt_leaked:ins_b1:replay-1');

      await quarantineCrossTenantDeliveries(stores.db);
      await quarantineCrossTenantDeliveries(stores.db); // as a migration run again after a crash

      for (const id of ['evt_leaked:ins_b1', 'evt_leaked:ins_b1:replay-1']) assert.equal(await stores.deliveries.get(id), undefined, `${id} is out of the log`);
      assert.deepEqual((await stores.deliveries.list({ orgs: ['org-b'] }, 50)).items.filter((item) => item.eventId === 'evt_leaked'), [], 'org-b lists none of it');
      assert.deepEqual(await stores.db.selectFrom('attempts').select('delivery_id').where('delivery_id', 'like', 'evt_leaked:ins_b1%').execute(), []);
      assert.deepEqual((await stores.events.recordEvents([event('evt_leaked', ['ins_a1'])])).get('evt_leaked')!.deliveryIds, ['evt_leaked:ins_a1'], 'a repeat answers org-a’s delivery alone');
      assert.ok(await stores.deliveries.get('evt_leaked:ins_a1'), 'org-a keeps its own');
      assert.ok(await stores.deliveries.get('evt_own_b:ins_b1'), 'org-b keeps its own');
      const kept = await stores.db.selectFrom('quarantined_deliveries').selectAll().where('event_id', '=', 'evt_leaked').orderBy('id').execute();
      assert.deepEqual(
        kept.map(({ id, organization_id, event_organization_id, status, attempts }) => ({ id, organization_id, event_organization_id, status, attempts: Number(attempts) })),
        [
          { id: 'evt_leaked:ins_b1', organization_id: 'org-b', event_organization_id: 'org-a', status: 'delivered', attempts: 1 },
          { id: 'evt_leaked:ins_b1:replay-1', organization_id: 'org-b', event_organization_id: 'org-a', status: 'pending', attempts: 0 },
        ],
      );
      assert.equal(await stores.deliveries.quarantined(), 2);
      assert.deepEqual(await stores.attempts.absent(['evt_leaked:ins_b1:replay-1', 'evt_never']), ['evt_never'], 'a shard holding a quarantined one is not told it was lost');
    });

    if (kind === 'sqlite') {
      it('takes a write locked out past the busy timeout for the database away for a moment (503), and a broken statement for no such thing', async function () {
        const file = (await testDatabaseUrl(kind, 'busy')).replace(/^sqlite:/, '');
        const [holder, writer] = [new SqliteDatabase(file), new SqliteDatabase(file, { timeout: 0 })];
        try {
          holder.exec('CREATE TABLE t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1)');
          assert.throws(() => writer.exec('INSERT INTO t VALUES (2)'), (err: { code?: string }) => err.code === 'SQLITE_BUSY' && isDatabaseUnavailable(err));
          assert.throws(() => holder.exec('INSERT INTO nowhere VALUES (1)'), (err: { code?: string }) => err.code === 'SQLITE_ERROR' && !isDatabaseUnavailable(err));
        } finally {
          holder.close();
          writer.close();
        }
      });
    }

    if (kind === 'postgres') {
      it('keeps statistics of organizations, statuses and event types together (ANALYZE fills them), for the planner to pick the narrowest list', async function () {
        await stores.events.recordEvents([event('evt_mix', ['ins_mix'], 'org-mix')]);
        await sql`ANALYZE deliveries`.execute(stores.db);
        const { rows } = await sql<{ stxname: string; mcv: boolean }>`SELECT s.stxname, d.stxdmcv IS NOT NULL AS mcv FROM pg_statistic_ext s JOIN pg_statistic_ext_data d ON d.stxoid = s.oid WHERE s.stxrelid = 'deliveries'::regclass`.execute(stores.db);
        assert.deepEqual(rows, [{ stxname: 'deliveries_organization_mix', mcv: true }]);
      });

      it('lives through the server ending a connection a transaction holds: the transaction fails, the process does not', async function () {
        const url = await testDatabaseUrl(kind, 'held_ended');
        const own = await openStores({ url, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test' });
        try {
          const failed = await own.db
            .transaction()
            .execute(async (trx) => {
              const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
              await sql`SELECT pg_terminate_backend(${rows[0]!.pid})`.execute(stores.db);
              // The connection ends while the transaction still holds it.
              await new Promise((resolve) => setTimeout(resolve, 300));
              await sql`SELECT 1`.execute(trx);
            })
            .then(() => false, () => true);
          assert.ok(failed, 'the transaction on an ended connection fails');
          await own.events.recordEvents([event('evt_after_held', ['ins_1'])]);
          assert.ok(await own.deliveries.get('evt_after_held:ins_1'));
        } finally {
          await own.close();
        }
      });

      it('lives through the server ending its idle connections (a restart, a failover): it says so, and the next query opens another', async function () {
        const warnings: string[] = [];
        const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });
        const url = await testDatabaseUrl(kind, 'idle_ended');
        const own = await openStores({ url, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test', logger });
        try {
          await own.events.recordEvents([event('evt_before', ['ins_1'])]);
          const database = new URL(url).pathname.slice(1);
          // Another session ends every connection of the log's, as a restarting server does.
          const ended = await sql<{ ended: boolean }>`SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = ${database} AND pid <> pg_backend_pid()`.execute(stores.db);
          assert.ok(ended.rows.length > 0 && ended.rows.every((row) => row.ended));
          await waitFor(async () => (warnings.some((msg) => msg.includes('PostgreSQL ended a connection')) ? true : undefined), 5000, 'the warning');
          await own.events.recordEvents([event('evt_after', ['ins_1'])]);
          assert.ok(await own.deliveries.get('evt_before:ins_1'));
          assert.ok(await own.deliveries.get('evt_after:ins_1'));
        } finally {
          await own.close();
        }
      });
    }

    it('migrates at every start without harm, from several processes at once', async function () {
      const url = await testDatabaseUrl(kind, `migrate_${kind}`);
      const opened = await Promise.all([1, 2, 3].map(() => openStores({ url, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test' })));
      await Promise.all(opened.map((store) => store.close()));
      const again = await openStores({ url, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test' });
      assert.deepEqual((await again.deliveries.list({ orgs: ['x'] }, 1)).items, []);
      await again.close();
    });
  });
}

describe('installations’ flags a migration could not derive (0017), on both databases', function () {
  for (const kind of ['sqlite', 'postgres'] as const) {
    it(`derives them from the sealed configurations at the first start with the key, keeps what no key opens for the next, then never again (${kind})`, async function () {
      const url = await testDatabaseUrl(kind, `flags_${kind}`);
      const key = process.env.TEST_ENCRYPTION_KEY!;
      const first = await openStores({ url, encryptionKey: key, namespace: 'test' });
      const installation = (id: string, configuration: Record<string, unknown>, integration = 'webhook', status: 'active' | 'deleted' = 'active') => ({ id, integration, target: { org: 'org-flags' }, status, events: ['space_content_updated'], scopes: [], configuration, url: 'https://e.example/', createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), revision: 1, signingSecrets: [] });
      const flags = async () => Object.fromEntries((await first.db.selectFrom('installations').select(['id', 'ordered', 'holds_while_failing']).orderBy('id').execute()).map((row) => [row.id, [Number(row.ordered), Number(row.holds_while_failing)]]));
      try {
        await first.installations.save(installation('ins_f1_opted_out', { auto_pause: false }));
        await first.installations.save(installation('ins_f2_default', {}));
        await first.installations.save(installation('ins_f3_ordered', { ordered: true }));
        await first.installations.save(installation('ins_f4_integration', {}, 'slack'));
        // Sealed with a key this process does not hold (rotated away without PLATFORM_DECRYPTION_KEYS).
        const otherKey = Buffer.alloc(32, 7).toString('base64');
        await new InstallationIndex(first.db, new Encryption(otherKey)).save(installation('ins_f5_other_key', { auto_pause: false }));
        // Deleted, its key gone with it: left as it is, not a reason to look again.
        await new InstallationIndex(first.db, new Encryption(otherKey)).save(installation('ins_f6_deleted', { auto_pause: false }, 'webhook', 'deleted'));
        // The log as 0016 left it, before 0017: every webhook not ordered holds, its row says so.
        await first.db.updateTable('installations').set({ holds_while_failing: 1 }).where('integration', '=', 'webhook').where('ordered', '=', 0).execute();
        await first.db.insertInto('sealed_rederivations').values({ name: 'installation_flags' }).execute();
        assert.deepEqual(await flags(), { ins_f1_opted_out: [0, 1], ins_f2_default: [0, 1], ins_f3_ordered: [1, 0], ins_f4_integration: [0, 0], ins_f5_other_key: [0, 1], ins_f6_deleted: [0, 1] });

        const logged: Record<string, unknown>[] = [];
        const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) });
        const second = await openStores({ url, encryptionKey: key, namespace: 'test', logger });
        await second.close();
        // The opted-out one no longer holds; the one no key opens keeps its flags, and is said.
        assert.deepEqual(await flags(), { ins_f1_opted_out: [0, 0], ins_f2_default: [0, 1], ins_f3_ordered: [1, 0], ins_f4_integration: [0, 0], ins_f5_other_key: [0, 1], ins_f6_deleted: [0, 1] });
        assert.equal(logged.find((line) => line.installations === 1 && /derived/.test(String(line.msg)))?.level, 30);
        assert.deepEqual(logged.find((line) => /no key opens/.test(String(line.msg)))?.ids, ['ins_f5_other_key']);
        assert.equal((await first.db.selectFrom('sealed_rederivations').selectAll().execute()).length, 1);

        // Started with the older key too: done, and the row goes.
        const third = await openStores({ url, encryptionKey: key, decryptionKeys: [otherKey], namespace: 'test' });
        await third.close();
        assert.deepEqual((await flags()).ins_f5_other_key, [0, 0]);
        assert.deepEqual(await first.db.selectFrom('sealed_rederivations').selectAll().execute(), []);
        // A change saved between the derivation's read and its write is the newer: its flags stand.
        // (Saved through a connection of its own: SQLite's connection is the derivation's until its read's result is handed on.)
        const elsewhere = await openStores({ url, encryptionKey: key, namespace: 'test' });
        await first.db.updateTable('installations').set({ holds_while_failing: 1 }).where('id', '=', 'ins_f1_opted_out').execute();
        await first.db.insertInto('sealed_rederivations').values({ name: 'installation_flags' }).execute();
        let raced = false;
        const racing: KyselyPlugin = {
          transformQuery: (args) => args.node,
          // Once the page is read, the installation changes (auto_pause on again, revision 2) before the derivation writes.
          async transformResult(args) {
            if (!raced && args.result.rows.some((row) => (row as { id?: string }).id === 'ins_f1_opted_out')) {
              raced = true;
              await elsewhere.installations.save({ ...installation('ins_f1_opted_out', { auto_pause: true }), revision: 2 });
            }
            return args.result;
          },
        };
        const derived = await new InstallationIndex(first.db.withPlugin(racing), new Encryption(key, [otherKey])).rederiveFlags().finally(() => elsewhere.close());
        assert.deepEqual(derived, { changed: 0, unopened: [] });
        assert.ok(raced);
        assert.deepEqual((await flags()).ins_f1_opted_out, [0, 1], 'held, as its newer configuration says');
        await first.installations.save({ ...installation('ins_f1_opted_out', { auto_pause: false }), revision: 3 });

        // Never again: a flag written since (by hand here) stays as it is.
        await first.db.updateTable('installations').set({ holds_while_failing: 1 }).where('id', '=', 'ins_f1_opted_out').execute();
        assert.deepEqual(await first.installations.rederiveFlags(), { changed: 0, unopened: [] });
        assert.deepEqual((await flags()).ins_f1_opted_out, [0, 1]);
      } finally {
        await first.close();
      }
    });
  }
});

describe('the delivery log on sqlite, as its planner sees it', function () {
  /** The log's statements, captured from a second connection to the file. */
  async function capturing(url: string) {
    const file = url.replace(/^sqlite:/, '');
    const queries: CompiledQuery[] = [];
    const sqlite = new SqliteDatabase(file);
    const db = new Kysely<any>({ dialect: new SqliteDialect({ database: sqlite }), log: (event) => void queries.push(event.query) });
    const encryption = new Encryption(process.env.TEST_ENCRYPTION_KEY!);
    return { attempts: new AttemptRecords(db, encryption), events: new EventRecords(db, encryption), queries, close: () => db.destroy() };
  }

  it('reads and writes an attempt batch by its ids, not by the pending index: its cost does not grow with the backlog', async function () {
    const url = await testDatabaseUrl('sqlite', 'planner');
    const stores = await openStores({ url, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test' });
    const own = await capturing(url);
    try {
      // A backlog: 600 pending deliveries, none attempted.
      await stores.events.recordEvents(Array.from({ length: 300 }, (_, i) => event(`evt_backlog_${i}`, ['ins_1', 'ins_2'])));
      const batch = Array.from({ length: 100 }, (_, i) => ({ id: `evt_backlog_${i}:ins_1`, attempt: 1 }));
      own.queries.length = 0;
      assert.equal((await own.attempts.toAttempt(batch)).size, 100);
      const attempt = { attempt: 1, startedAt: new Date().toISOString(), durationMs: 3, url: 'https://example.com/hook', statusCode: 200 };
      await own.attempts.recordOutcomes(batch.slice(0, 25).map(({ id }) => ({ id, status: 'delivered' as const, attempt })), run);
      await own.attempts.recordOutcomes(batch.slice(25, 50).map(({ id }) => ({ id, status: 'pending' as const, attempt: { ...attempt, statusCode: 503, nextDelayMs: 1000 } })), run);
      assert.equal((await own.events.pendingOf(['evt_backlog_0', 'evt_backlog_1', 'evt_backlog_2'])).length, 3, 'their ins_1 deliveries were delivered');
      const statements = own.queries.filter((query) => /^(select|update)/i.test(query.sql) && /"deliveries"/.test(query.sql));
      assert.equal(statements.length, 4, statements.map((query) => query.sql).join('\n'));
      for (const query of statements) {
        // As the connection that seeded the statistics plans it (it had read the schema before).
        const plan = (await stores.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]))).rows.map((row) => row.detail).join(' | ');
        // By key: the primary key for ids, the event index for eventIds; never a range of pending deliveries.
        assert.match(plan, /USING INDEX (sqlite_autoindex_deliveries_1|deliveries_event) \((id|event_id)=\?\)/, `${query.sql}\n${plan}`);
        assert.doesNotMatch(plan, /deliveries_pending_age|SCAN/, `${query.sql}\n${plan}`);
      }
    } finally {
      await own.close();
      await stores.close();
    }
  });

  it("keeps statistics of the operator's own ANALYZE over the typical shape it starts with", async function () {
    const url = await testDatabaseUrl('sqlite', 'analyzed');
    const stats = async () => {
      const stores = await openStores({ url, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test' });
      const rows = await sql<{ stat: string }>`SELECT stat FROM sqlite_stat1 WHERE idx = 'sqlite_autoindex_deliveries_1'`.execute(stores.db);
      return { stores, stat: rows.rows.map((row) => row.stat) };
    };
    const first = await stats();
    assert.deepEqual(first.stat, ['1000000 1'], 'seeded at the first start');
    await first.stores.events.recordEvents([event('evt_analyzed', ['ins_1', 'ins_2', 'ins_3'])]);
    await sql`ANALYZE`.execute(first.stores.db);
    await first.stores.close();
    const again = await stats();
    await again.stores.close();
    assert.deepEqual(again.stat, ['3 1'], 'the real figures stay');
  });

  it('gives an index a later migration added figures like its table’s: typical beside typical ones, its own ANALYZE beside real ones', async function () {
    const url = await testDatabaseUrl('sqlite', 'upgraded');
    const index = 'deliveries_organization_event_type';
    /** Opens the log as a start after the upgrade does, its statistics as they were before the index: its figures then, and a plan of the organization's list. */
    const upgraded = async () => {
      const before = await openStores({ url, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test' });
      await sql`DELETE FROM sqlite_stat1 WHERE idx = ${index}`.execute(before.db);
      await before.close();
      const after = await openStores({ url, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test' });
      try {
        const stat = (await sql<{ stat: string }>`SELECT stat FROM sqlite_stat1 WHERE idx = ${index}`.execute(after.db)).rows.map((row) => row.stat);
        const plan = (await sql<{ detail: string }>`EXPLAIN QUERY PLAN SELECT * FROM deliveries WHERE organization_id = 'a' ORDER BY created_at DESC, id DESC LIMIT 51`.execute(after.db)).rows.map((row) => row.detail).join(' | ');
        return { stat, plan };
      } finally {
        await after.close();
      }
    };
    const seeded = await upgraded();
    assert.deepEqual(seeded.stat, ['1000000 10000 1000 2 1']);
    // Without figures SQLite took the new index for a few rows and sorted the organization's history.
    assert.match(seeded.plan, /USING INDEX deliveries_organization \(organization_id=\?\)/, seeded.plan);
    assert.doesNotMatch(seeded.plan, /TEMP B-TREE/, seeded.plan);
    const own = await openStores({ url, encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test' });
    await own.events.recordEvents([event('evt_upgraded', ['ins_1', 'ins_2', 'ins_3'])]);
    await sql`ANALYZE`.execute(own.db);
    await own.close();
    const analyzed = await upgraded();
    assert.match(analyzed.stat.join(), /^3 3 3 \d 1$/, 'its own figures (3 rows, one organization and type), as the operator’s ANALYZE would have written');
  });
});
