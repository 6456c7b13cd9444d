import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { LIST_RULES } from '../src/api/routes/deliveries';
import type { DeliveryFilter, PageCursor } from '../src/delivery-log/types';
import { openStores, type PlatformStores } from '../src/platform/stores';
import { generateEncryptionKey } from '../src/temporal/codec';
import { startPostgres } from '../test/support/postgres';
import { ratio, round, tenant } from './drive';
import { listPlans, type PlannedList } from './list-plans';
import { seedLog, type LogShape, type Sample } from './list-seed';
import { httpClient, percentile } from './load';
import type { BenchReceiver } from './receiver';
import { startSplit, type Stack } from './stack';

/** Requests a query, one at a time, after WARM_UP uncounted; the target for each first page and a delivery's page. */
const REQUESTS = 200;
const WARM_UP = 10;
const TARGET_P95_MS = 200;
const PAGE_SIZE = LIST_RULES.pageSize.default;
const EVENT_TYPES = ['space_content_updated', 'site_view', 'page_feedback', 'space_gitsync_completed', 'installation_paused'] as const;
/** The measured organization has every type but this one, which the others have. */
const NEVER_HAD = EVENT_TYPES.at(-1)!;
const HAD = EVENT_TYPES.filter((type) => type !== NEVER_HAD);
/** Installations of each of the three organizations: 50 in all. */
const INSTALLATIONS = [17, 17, 16];
const DAYS = 30;
const HOUR_MS = 3_600_000;

const any = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;

/** Where a page after the first starts: the API's token, the store's cursor. */
interface Page {
  token: string;
  cursor: PageCursor;
}

/** A list request: its query string, and the page it asks for if not the first. */
interface Ask {
  query: Record<string, string>;
  after?: Page;
}

/** The filter the route hands the store for a query (a member of one organization). */
const filterOf = (org: string, query: Record<string, string>): DeliveryFilter => ({
  orgs: [org],
  installation: query.installation,
  status: query.status as DeliveryFilter['status'],
  eventType: query.eventType,
  eventId: query.eventId,
  since: query.since === undefined ? undefined : Date.parse(query.since),
  until: query.until === undefined ? undefined : Date.parse(query.until),
});

/** What (q) asks, by name: the filters, an event type the organization never had (alone, with a status), a second page, and an installation's event type (checked on its range's rows). */
function asks(shape: LogShape, sample: Sample, pages: Map<string, Page>): Record<string, { ask: () => Ask; sortsFewRows?: true }> {
  const installations = shape.orgs[0]!.installations;
  const middle = shape.now - (DAYS / 2) * 86_400_000;
  return {
    newest: { ask: () => ({ query: {} }) },
    installation: { ask: () => ({ query: { installation: any(installations) } }) },
    'status=failed': { ask: () => ({ query: { status: 'failed' } }) },
    eventType: { ask: () => ({ query: { eventType: any(HAD) } }) },
    'absent eventType': { ask: () => ({ query: { eventType: NEVER_HAD } }) },
    'absent eventType+status': { ask: () => ({ query: { eventType: NEVER_HAD, status: 'failed' } }) },
    'installation+status': { ask: () => ({ query: { installation: any(installations), status: 'failed' } }) },
    'one hour (since/until)': {
      ask: () => {
        const since = middle + Math.floor((Math.random() - 0.5) * 5 * 86_400_000);
        return { query: { since: new Date(since).toISOString(), until: new Date(since + HOUR_MS).toISOString() } };
      },
    },
    eventId: { ask: () => ({ query: { eventId: any(sample.eventIds) } }), sortsFewRows: true },
    'eventType, page 2': {
      ask: () => {
        const eventType = any(HAD);
        return { query: { eventType }, after: pages.get(eventType)! };
      },
    },
    'installation+eventType': { ask: () => ({ query: { installation: any(installations), eventType: any(HAD) } }) },
  };
}

/** p50 / p95 / p99 ms of REQUESTS sequential calls of `call` (answering the rows it got), after WARM_UP more. */
async function timed(call: () => Promise<number>) {
  for (let i = 0; i < WARM_UP; i++) await call();
  // In µs: a store's read may take under 0.1 ms, percentile's precision.
  const us: number[] = [];
  let rows = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const started = performance.now();
    rows += await call();
    us.push((performance.now() - started) * 1000);
  }
  const ms = (p: number) => round(percentile(us, p) / 1000, 2);
  return { p50: ms(50), p95: ms(95), p99: ms(99), rowsPerCall: round(rows / REQUESTS) };
}

/** Each query through the API (HTTP, a member's token) and straight through the store the route calls, in turn. */
async function measure(stack: Stack, token: string, stores: PlatformStores, shape: LogShape, sample: Sample, label: string) {
  const client = httpClient(1);
  const org = shape.orgs[0]!.org;
  const get = async (route: string) => {
    const answer = await client.send(`${stack.base}${route}`, 'GET', { authorization: `Bearer ${token}` });
    if (answer.status !== 200) throw new Error(`GET ${route}: ${answer.status} ${answer.text}`);
    return JSON.parse(answer.text) as { items?: unknown[]; nextPageToken?: string };
  };
  const route = (ask: Ask) => `/v1/deliveries?${new URLSearchParams({ ...ask.query, ...(ask.after && { pageToken: ask.after.token }) })}`;
  // The second pages' starts: the API's token and the store's cursor after each event type's first page.
  const pages = new Map<string, Page>();
  for (const eventType of HAD) {
    const [api, store] = [await get(route({ query: { eventType } })), await stores.deliveries.list(filterOf(org, { eventType }), PAGE_SIZE)];
    pages.set(eventType, { token: api.nextPageToken!, cursor: store.next! });
  }
  const figures: Record<string, { api: Awaited<ReturnType<typeof timed>>; store: Awaited<ReturnType<typeof timed>> }> = {};
  const lists = asks(shape, sample, pages);
  for (const [name, { ask }] of Object.entries(lists)) {
    process.stderr.write(`  [q ${label}] ${name}\n`);
    const api = await timed(async () => (await get(route(ask()))).items!.length);
    const store = await timed(async () => {
      const { query, after } = ask();
      return (await stores.deliveries.list(filterOf(org, query), PAGE_SIZE, after?.cursor)).items.length;
    });
    figures[name] = { api, store };
  }
  process.stderr.write(`  [q ${label}] GET /v1/deliveries/:id\n`);
  figures['GET /v1/deliveries/:id'] = {
    api: await timed(async () => {
      await get(`/v1/deliveries/${encodeURIComponent(any(sample.ids))}`);
      return 1;
    }),
    store: await timed(async () => ((await stores.deliveries.get(any(sample.ids))) ? 1 : 0)),
  };
  client.close();
  const planned: PlannedList[] = Object.entries(lists).map(([name, { ask, sortsFewRows }]) => {
    const { query, after } = ask();
    return { name, filter: filterOf(org, query), after: after?.cursor, ...(sortsFewRows && { sortsFewRows }) };
  });
  return { figures, planned };
}

/** One database: a split stack on it, its tenants made through the API, the log seeded, then measured. */
async function onDatabase(database: 'sqlite' | 'postgres', receiver: BenchReceiver, deliveries: number) {
  const postgres = database === 'postgres' ? await startPostgres() : undefined;
  const encryptionKey = generateEncryptionKey();
  process.stderr.write(`bench: (q) on ${database}: API, worker and dev server, ${INSTALLATIONS.length} organizations\n`);
  const stack = await startSplit({ PLATFORM_ENCRYPTION_KEY: encryptionKey, ...(postgres && { PLATFORM_DATABASE_URL: postgres.url }) });
  try {
    const tenants = [];
    for (const installations of INSTALLATIONS) tenants.push(await tenant(stack, receiver, installations));
    // The API alone from here: a worker would sweep the seeded pending deliveries to their shards (and send them) while the lists are timed.
    stack.killWorker!();
    const url = postgres?.url ?? `sqlite:${path.join(stack.dataDir, 'delivery-log.db')}`;
    const shape: LogShape = { deliveries, days: DAYS, now: Date.now(), orgs: tenants.map(({ org, installations }, i) => ({ org, installations, eventTypes: i === 0 ? HAD : EVENT_TYPES })), url: receiver.url };
    const loadBefore = os.loadavg()[0]!;
    const { sample, ...seeded } = await seedLog(url, encryptionKey, shape, database);
    const stores = await openStores({ url, encryptionKey, namespace: 'bench' });
    try {
      const logMiB = postgres ? round(Number((await sql<{ bytes: string }>`SELECT pg_database_size(current_database()) AS bytes`.execute(stores.db)).rows[0]!.bytes) / 2 ** 20, 0) : stack.logSizeMiB();
      const loadMeasured = os.loadavg()[0]!;
      const { figures, planned } = await measure(stack, tenants[0]!.token, stores, shape, sample, database);
      const loadAfter = os.loadavg()[0]!;
      const plans = await listPlans(url, stores.db, encryptionKey, planned, PAGE_SIZE);
      const queries = Object.fromEntries(Object.entries(figures).map(([name, { api, store }]) => [name, { api, store, ratioP50: ratio(api.p50, store.p50), ratioP95: ratio(api.p95, store.p95), targetMet: api.p95 <= TARGET_P95_MS }]));
      return { seeded, logMiB, loadAverage: { beforeSeed: round(loadBefore, 2), beforeMeasuring: round(loadMeasured, 2), after: round(loadAfter, 2) }, queries, plans };
    } finally {
      await stores.close();
    }
  } finally {
    await stack.stop();
    await postgres?.stop();
  }
}

/**
 * (q) Lists on a large log (the target: the first page of a filtered list and a
 * delivery's page at p95 <= 200 ms with 1,000,000 deliveries, on SQLite and PostgreSQL):
 * the log seeded straight into the database, then each query through the API, one at a
 * time, beside the same page read through the store the route calls (what the API adds),
 * and each list's plan.
 */
export async function listScenario(receiver: BenchReceiver, scale: number) {
  const deliveries = Math.max(10_000, Math.round(1_000_000 * scale));
  const sqlite = await onDatabase('sqlite', receiver, deliveries);
  const postgres = await onDatabase('postgres', receiver, deliveries);
  return { deliveries, requests: REQUESTS, cpus: os.cpus().length, sqlite, postgres };
}

/** (q)'s lines of the bench's report. */
export function listReport(q: Awaited<ReturnType<typeof listScenario>>, line: (label: string, value: unknown) => string): string[] {
  const head = `(q) lists on ${q.deliveries.toLocaleString('en')} deliveries (${INSTALLATIONS.length} organizations, ${INSTALLATIONS.reduce((a, b) => a + b)} installations, ${EVENT_TYPES.length} event types, ${DAYS} days), a member of one organization, ${q.requests} requests a query one at a time: API (HTTP) and store (no HTTP) p50 / p95 / p99 ms`;
  const ms = (f: { p50: number; p95: number; p99: number }) => `${f.p50} / ${f.p95} / ${f.p99}`;
  return [
    head,
    ...(['sqlite', 'postgres'] as const).flatMap((database) => {
      const d = q[database];
      return [
        line(`${database}: seeded`, `${d.seeded.deliveries} deliveries, ${d.seeded.attempts} attempts in ${d.seeded.seconds} s (inserts ${d.seeded.insertSeconds} s, ${d.seeded.deliveriesPerS} deliveries/s); ${d.logMiB} MiB; load average ${d.loadAverage.beforeSeed} before seeding, ${d.loadAverage.beforeMeasuring} -> ${d.loadAverage.after} measuring (${q.cpus} cores)`),
        ...Object.entries(d.queries).map(([name, f]) => line(`${database} ${name}`, `API ${ms(f.api)}, store ${ms(f.store)}, ratio p50 ${f.ratioP50} p95 ${f.ratioP95}; ${f.api.rowsPerCall} rows; target p95 <= ${TARGET_P95_MS}: ${f.targetMet ? 'met' : 'NOT met'}`)),
        ...Object.entries(d.plans).map(([name, p]) => line(`${database} plan ${name}`, `${p.reads}: ${p.plan}`)),
      ];
    }),
  ];
}
