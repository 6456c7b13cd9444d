import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { openStores, type PlatformStores } from '../src/platform/stores';
import { inLineOrder } from '../src/delivery-log/rows';
import { freePort } from '../src/temporal/dev-server';
import { entryPoint, waitForOk } from './support/entry-point';
import { namespaceFor } from './support/namespaces';
import { waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { testDatabaseUrl, testSettings } from './support/settings';

const EVENTS = 5000;
const CONCURRENCY = 32;

/** The throttled installation's pace: about what the run sends to it at its busiest (its sends a second are printed). */
const MAX_PER_SECOND = 300;

/**
 * Crash safety (delivery at scale): SIGKILL of the worker and of the API in the middle of
 * 5,000 events, with a client that sends eventIds and retries whatever was not answered
 * 202. Each event goes to two installations of the organization, with the webhook
 * features on: one signing with the Standard Webhooks headers, throttled, auto-pause on,
 * to a receiver that answers 503 to 30% of requests (so auto-pause, the default, never
 * pauses it; a hold while it seems to fail everything may come and go); one ordered, to a
 * receiver that answers 200.
 */
describe('crash safety: SIGKILL of the worker and of the API under load', function () {
  // The ordered line delivers its 5,000 one at a time, beside the rest, on a busy machine.
  this.timeout(480_000);
  const namespace = namespaceFor(__filename);
  // 30% of requests answer 503, decided by the request count so that the run is repeatable.
  // Each request's Standard Webhooks signature is checked as it arrives (the library refuses timestamps 5 minutes old).
  let secret: string | undefined;
  const unverified: string[] = [];
  const receiver = new ScriptedReceiver((n, request) => {
    try {
      new Webhook(secret!).verify(request.body, request.headers as Record<string, string>);
    } catch (err) {
      unverified.push(`${request.body.slice(0, 60)}: ${(err as Error).message}`);
    }
    return n % 10 < 3 ? { status: 503 } : { status: 200 };
  });
  const ordered = new ScriptedReceiver();
  const processes: { api?: ChildProcess; worker?: ChildProcess } = {};
  let stores: PlatformStores;
  let base = '';
  let env: NodeJS.ProcessEnv;
  const accepted = new Map<string, string[]>();
  const installations = { signed: '', ordered: '' };
  /** What the ordered installation's receiver had had when the worker was killed. */
  let orderedAtKill = 0;
  const stats = { requests: 0, unanswered: 0, refused503: 0, workerKills: 0, apiKills: 0 };

  async function startApi(): Promise<void> {
    processes.api = entryPoint('api', env);
    await waitForOk(base, '/healthz', 'the API');
  }
  const startWorker = () => (processes.worker = entryPoint('worker', env));

  async function admin(method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> {
    const response = await fetch(`${base}${route}`, { method, headers: { authorization: `Bearer ${env.PLATFORM_ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: response.status, body: await response.json() };
  }

  before(async function () {
    const { address, encryptionKey } = testSettings();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const databaseUrl = await testDatabaseUrl('sqlite', 'crash');
    env = {
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      PLATFORM_TASK_QUEUE: namespace,
      PLATFORM_ENCRYPTION_KEY: encryptionKey,
      PLATFORM_ADMIN_TOKEN: `adm_${randomBytes(16).toString('hex')}`,
      PLATFORM_DATABASE_URL: databaseUrl,
      PLATFORM_ALLOW_PRIVATE_TARGETS: 'true',
      PORT: String(port),
      PLATFORM_BASE_URL: base,
      // Not the default 9464: other test files run workers at the same time.
      PLATFORM_WORKER_METRICS_PORT: String(await freePort()),
      LOG_LEVEL: 'error',
    };
    await Promise.all([receiver.start(), ordered.start()]);
    startWorker();
    await startApi();
    stores = await openStores({ url: databaseUrl, encryptionKey, namespace });

    const org = `crash-${randomBytes(3).toString('hex')}`;
    // Until the worker polls, the engine answers 503.
    await waitFor(async () => ([201, 409].includes((await admin('POST', '/v1/orgs', { id: org, subdomain: org, title: 'Crash' })).status) ? true : undefined), 60_000, 'the worker', 500);
    const user = await admin('POST', '/v1/users', { id: `${org}-u`, orgs: [org] });
    const asMember = async (method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> => {
      const response = await fetch(`${base}${route}`, { method, headers: { authorization: `Bearer ${user.body.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    };
    const install = async (configuration: Record<string, unknown>) => {
      const installed = await asMember('POST', '/v1/integrations/webhook/installations', { target: { org, space: 'crash' }, configuration: { space_content_updated: true, ...configuration } });
      assert.equal(installed.status, 201, JSON.stringify(installed.body));
      return installed.body.id as string;
    };
    installations.signed = await install({ webhook_url: receiver.url, signature_headers: 'standard', max_per_second: MAX_PER_SECOND, auto_pause: true });
    const signing = await asMember('GET', `/v1/installations/${installations.signed}/signing-secret`);
    assert.equal(signing.status, 200);
    secret = signing.body.secret;
    installations.ordered = await install({ webhook_url: ordered.url, ordered: true });

    let next = 0;
    const send = async (i: number) => {
      const event = { type: 'space_content_updated', organizationId: org, spaceId: 'crash', revisionId: `r${i}`, eventId: `evt_crash_${org}_${i}` };
      // Retried until answered 202: a refused connection, a reset or a 503 means "not known to be accepted".
      for (;;) {
        stats.requests += 1;
        const answer = await admin('POST', '/v1/events', event).catch(() => undefined);
        if (answer?.status === 202) {
          accepted.set(event.eventId, answer.body.deliveries);
          return;
        }
        if (answer?.status === 503) stats.refused503 += 1;
        else stats.unanswered += 1;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    const chaos = (async () => {
      await waitFor(async () => (accepted.size >= EVENTS * 0.3 ? true : undefined), 120_000, 'a third of the events', 20);
      processes.worker!.kill('SIGKILL');
      stats.workerKills += 1;
      orderedAtKill = ordered.requests.length;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      startWorker();
      await waitFor(async () => (accepted.size >= EVENTS * 0.6 ? true : undefined), 120_000, 'two thirds of the events', 20);
      processes.api!.kill('SIGKILL');
      stats.apiKills += 1;
      await new Promise((resolve) => setTimeout(resolve, 500));
      await startApi();
    })();
    await Promise.all([...Array.from({ length: CONCURRENCY }, async () => {
      while (next < EVENTS) await send(next++);
    }), chaos]);
    await waitFor(async () => {
      const pending = await stores.db.selectFrom('deliveries').select(({ fn }) => fn.countAll<number>().as('n')).where('status', 'in', ['pending', 'held']).executeTakeFirstOrThrow();
      return Number(pending.n) === 0 ? true : undefined;
    }, 180_000, 'every delivery to finish', 500);
  });
  after(async () => {
    processes.api?.kill('SIGKILL');
    processes.worker?.kill('SIGKILL');
    await Promise.all([receiver.stop(), ordered.stop(), stores?.close()]);
  });

  it('accepts every event once the client has retried, and none is lost: each ends delivered or failed and recorded', async function () {
    assert.equal(stats.workerKills, 1);
    assert.equal(stats.apiKills, 1);
    assert.equal(accepted.size, EVENTS);
    assert.equal([...accepted.values()].flat().length, 2 * EVENTS, 'a delivery per event to each installation');
    const ids = [...accepted.values()].flat().filter((id) => id.endsWith(`:${installations.signed}`));
    assert.equal(ids.length, EVENTS);
    const rows = await stores.db.selectFrom('deliveries').select(['id', 'event_id', 'status', 'attempts']).where('installation_id', '=', installations.signed).execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    const statuses: Record<string, number> = {};
    for (const id of ids) {
      const row = byId.get(id);
      assert.ok(row, `${id} is not in the log`);
      statuses[row.status] = (statuses[row.status] ?? 0) + 1;
    }
    // A failed delivery spent its four attempts on the receiver's answers; those the kills
    // interrupted (their answers never seen) are beside them, and spend none.
    const failed = ids.filter((id) => byId.get(id)!.status === 'failed');
    const answered = failed.length ? await stores.db.selectFrom('attempts').select(['delivery_id', 'error']).where('delivery_id', 'in', failed).execute() : [];
    for (const id of failed) assert.equal(answered.filter((attempt) => attempt.delivery_id === id && attempt.error !== 'interrupted').length, 4, `${id} failed after other than 4 answered attempts`);
    assert.equal((statuses.delivered ?? 0) + (statuses.failed ?? 0), EVENTS, JSON.stringify(statuses));

    const okByEvent = new Map<string, number>();
    let receiver503 = 0;
    receiver.requests.forEach((request, n) => {
      if (n % 10 < 3) receiver503 += 1;
      else okByEvent.set(JSON.parse(request.body).eventId, (okByEvent.get(JSON.parse(request.body).eventId) ?? 0) + 1);
    });
    for (const row of rows.filter((r) => r.status === 'delivered')) assert.ok(okByEvent.has(row.event_id), `${row.event_id} is delivered in the log but the receiver never answered it 200`);
    const duplicates = [...okByEvent.values()].reduce((sum, count) => sum + count - 1, 0);
    process.stdout.write(
      `      crash run: ${EVENTS} events, ${stats.requests} ingest requests (${stats.refused503} answered 503, ${stats.unanswered} unanswered), ` +
        `${statuses.delivered} delivered, ${statuses.failed ?? 0} failed after 4 attempts, ${receiver.requests.length} POSTs (${receiver503} answered 503), ` +
        `${duplicates} duplicate 200s (${((duplicates / EVENTS) * 100).toFixed(2)}%)\n`,
    );
  });

  it('signs every request to the installation that asked for Standard Webhooks headers so that the specification’s library verifies it, and sends it no faster than its max_per_second', function () {
    assert.ok(receiver.requests.length >= EVENTS);
    assert.deepEqual(unverified.slice(0, 3), [], `${unverified.length} of ${receiver.requests.length} requests failed the Standard Webhooks library's check`);
    // Sends go at their slots or later: those a busy moment held back go together (a CI run
    // saw 515 in a second), so the bound is over 20 s windows, with room for 2 s of lateness
    // (the slots' spacing itself is tested exactly on the log: 'keeps a pace whose interval
    // is no whole millisecond').
    const at = receiver.requests.map((request) => request.at).sort((a, b) => a - b);
    /** The most requests in any window of `windowMs` (two pointers over the sorted times). */
    const most = (windowMs: number) => {
      let best = 0;
      for (let i = 0, j = 0; i < at.length; i++) {
        while (j < at.length && at[j]! < at[i]! + windowMs) j++;
        best = Math.max(best, j - i);
      }
      return best;
    };
    const [second, tenSeconds, twentySeconds] = [most(1000), most(10_000), most(20_000)];
    assert.ok(twentySeconds <= MAX_PER_SECOND * 22, `${twentySeconds} requests in 20 s`);
    process.stdout.write(`      throttled at ${MAX_PER_SECOND}/s: at most ${second} requests in a second, ${tenSeconds} in 10 s, ${twentySeconds} in 20 s\n`);
  });

  it('delivers every event to the ordered installation in the order the log recorded them, through both kills', async function () {
    const recorded = await stores.db.selectFrom('deliveries').select(['event_id', 'status']).where('installation_id', '=', installations.ordered).$call(inLineOrder).execute();
    assert.equal(recorded.length, EVENTS);
    assert.deepEqual(recorded.filter((row) => row.status !== 'delivered'), [], 'its receiver answers 200: each delivered');
    // A resend (an attempt a kill cut off) may come again later; each event's first arrival is in the order recorded.
    const firstArrivals = [...new Set(ordered.requests.map((request) => JSON.parse(request.body).eventId as string))];
    assert.equal(firstArrivals.length, EVENTS);
    assert.ok(orderedAtKill > 0 && orderedAtKill < EVENTS, `the line was under way at the worker's kill (${orderedAtKill} sent)`);
    const outOfOrder = firstArrivals.findIndex((eventId, i) => eventId !== recorded[i]!.event_id);
    assert.equal(outOfOrder, -1, `arrival ${outOfOrder}: ${firstArrivals[outOfOrder]}, recorded ${recorded[outOfOrder]?.event_id}`);
    process.stdout.write(`      ordered: ${EVENTS} events in the order recorded, ${ordered.requests.length - EVENTS} sent again, ${orderedAtKill} sent before the worker's kill\n`);
  });
});
