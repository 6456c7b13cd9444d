import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { install, publishExample } from './support/examples';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

const CHROMIUM = process.env.PLATFORM_TEST_CHROMIUM ?? '/usr/bin/chromium';
const SCREENSHOTS = path.join(__dirname, '..', '..', 'test-results', 'console');
const LOGBOOK = path.join(__dirname, '..', '..', 'test', 'fixtures', 'logbook');

/**
 * The console's installations and integrations pages, in Debian's chromium against the real
 * service, Temporal and a receiver: health and its chart, bulk replay with its count first,
 * pause and resume, the signing secret's rotation, an integration's versions and logs.
 */
describe('the web console: installations, operations and integrations, in a real browser', function () {
  const platform = new TestPlatform(__filename);
  let failing = true;
  const receiver = new ScriptedReceiver(() => ({ status: failing ? 503 : 200, delayMs: 5 }));
  let browser: Browser;
  let tenant: { org: string; token: string };
  let hook: { id: string };
  const failedEvents: string[] = [];

  before(async function () {
    mkdirSync(SCREENSHOTS, { recursive: true });
    [browser] = await Promise.all([chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }), platform.start(), receiver.start()]);
    tenant = await platform.tenant();
    // Three retries at most, a few seconds apart (the test platform's schedule): three deliveries fail, one is delivered.
    hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-ops' }, receiver.url, { space_content_updated: true });
    for (let i = 0; i < 3; i++) failedEvents.push((await platform.ingest(spaceEvent(tenant.org, 'sp-ops'))).body.deliveries[0]);
    for (const id of failedEvents) assert.equal((await platform.finalDelivery(id, tenant.token, 120_000)).status, 'failed');
    failing = false;
    const delivered = (await platform.ingest(spaceEvent(tenant.org, 'sp-ops'))).body.deliveries[0];
    assert.equal((await platform.finalDelivery(delivered, tenant.token)).status, 'delivered');
  });
  after(async () => Promise.all([browser?.close(), platform.stop(), receiver.stop()]));

  const signIn = async (): Promise<Page> => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(`${platform.api.url}/console`);
    await page.getByLabel('Token').fill(tenant.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    return page;
  };
  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  const openInstallation = async (page: Page) => {
    await page.getByRole('link', { name: 'Installations' }).click();
    const row = page.getByRole('row').filter({ hasText: hook.id });
    await row.waitFor();
    return row;
  };

  it('lists installations with their last day’s health, and shows one’s figures and its chart by hour and outcome', async function () {
    const page = await signIn();
    const row = await openInstallation(page);
    await row.getByText('25.0%').waitFor();
    assert.match((await row.textContent())!, /1 delivered, 3 failed, 0 pending/);
    assert.match((await row.textContent())!, /\d+ \/ \d+ ms/, 'latency p50 / p95');
    assert.match((await row.textContent())!, /503 at /, 'the last failure');
    await shot(page, 'installations');
    await row.getByRole('link', { name: hook.id }).click();
    await page.getByRole('heading', { name: `Installation ${hook.id}` }).waitFor();
    await page.getByText(/p50 \d+ ms, p95 \d+ ms \(\d+ attempts\)/).waitFor();
    const chart = page.getByRole('img', { name: /Deliveries by hour/ });
    await chart.waitFor();
    assert.equal(await chart.locator('rect[fill="#cf222e"]').count(), 1, 'this hour’s failures drawn');
    assert.equal(await chart.locator('rect[fill="#1a7f37"]').count(), 1, 'and its delivery');
    // The same figures for a screen reader: the hour's row of the chart's table.
    assert.equal(await page.getByRole('table', { name: 'Deliveries by hour' }).getByRole('row').count(), 25);
    await shot(page, 'installation-health');
    await page.context().close();
  });

  it('is usable by keyboard: sign in, reach an installation, count its failed deliveries, each by its key', async function () {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(`${platform.api.url}/console`);
    // The form is drawn once the page has asked for a session: Tab then reaches its one field.
    await page.getByLabel('Token').waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.type(tenant.token);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    // Each control reached by focus and worked by its key (links: Enter; the focus ring shown).
    await page.getByRole('link', { name: 'Installations' }).focus();
    await page.keyboard.press('Enter');
    const link = page.getByRole('link', { name: hook.id });
    await link.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Installation ${hook.id}` }).waitFor();
    await page.getByRole('button', { name: 'Count failed deliveries' }).focus();
    await page.keyboard.press('Enter');
    await page.getByText(/failed deliveries? in this range will be replayed/).waitFor();
    assert.equal(await page.evaluate("getComputedStyle(document.activeElement).outlineStyle"), 'solid', 'the focused control shows it');
    await page.context().close();
  });

  it('filters the delivery log by creation time and event type', async function () {
    const page = await signIn();
    const local = (ms: number) => new Date(ms - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByRole('row').filter({ hasText: failedEvents[0]!.split(':')[0]! }).first().waitFor();
    await page.getByLabel('Created until').fill(local(Date.now() - 3_600_000));
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No deliveries match.').waitFor();
    await page.getByLabel('Created until').fill('');
    await page.getByLabel('Created from').fill(local(Date.now() - 3_600_000));
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('row').filter({ hasText: failedEvents[0]!.split(':')[0]! }).first().waitFor();
    await shot(page, 'deliveries-time-range');
    // By event type: none of another type; an unknown one is refused, naming the field.
    await page.getByLabel('Event type').fill('space_view');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No deliveries match.').waitFor();
    await page.getByLabel('Event type').fill('no_such_type');
    await page.getByRole('button', { name: 'Filter' }).click();
    assert.match((await page.getByRole('alert').textContent())!, /eventType must be one of/);
    await page.context().close();
  });

  it('bulk-replays the failed deliveries of a time range, the count shown before confirming: the receiver gets each once', async function () {
    const page = await signIn();
    await (await openInstallation(page)).getByRole('link', { name: hook.id }).click();
    await page.getByLabel('From').fill(new Date(Date.now() - 3_600_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16));
    await page.getByRole('button', { name: 'Count failed deliveries' }).click();
    await page.getByText('3 failed deliveries in this range will be replayed (once per event).').waitFor();
    const before = receiver.requests.length;
    await shot(page, 'bulk-replay-count');
    await page.getByRole('button', { name: 'Replay 3' }).click();
    await page.getByText(/: done, 3 of 3 replayed\./).waitFor({ timeout: 60_000 });
    const eventIds = failedEvents.map((id) => id.split(':')[0]!);
    await waitFor(async () => (eventIds.every((eventId) => receiver.requests.slice(before).some((request) => request.body.includes(eventId))) ? true : undefined), 60_000, 'the three replays at the receiver');
    assert.equal(receiver.requests.slice(before).length, 3, 'each once');
    await shot(page, 'bulk-replay-done');
    await page.context().close();
  });

  it('pauses and resumes an installation: events while paused are skipped, delivered again after', async function () {
    const page = await signIn();
    await (await openInstallation(page)).getByRole('link', { name: hook.id }).click();
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.locator('.status-paused').first().waitFor();
    const skipped = (await platform.ingest(spaceEvent(tenant.org, 'sp-ops'))).body.deliveries[0];
    assert.equal((await platform.finalDelivery(skipped, tenant.token)).status, 'skipped');
    await shot(page, 'installation-paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('.status-active').first().waitFor();
    const after = (await platform.ingest(spaceEvent(tenant.org, 'sp-ops'))).body.deliveries[0];
    assert.equal((await platform.finalDelivery(after, tenant.token)).status, 'delivered');
    await page.context().close();
  });

  it('reveals and rotates the signing secret, showing until when the old one still signs', async function () {
    const page = await signIn();
    await (await openInstallation(page)).getByRole('link', { name: hook.id }).click();
    await page.getByRole('button', { name: 'Reveal secret' }).click();
    const old = (await page.getByLabel('Secret value').textContent())!;
    assert.equal(old, (await platform.http('GET', `/v1/installations/${hook.id}/signing-secret`, { token: tenant.token })).body.secret);
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('status').filter({ hasText: 'Rotated' }).waitFor();
    await page.getByText(/The previous secret is still signed with until/).waitFor();
    assert.notEqual(await page.getByLabel('Secret value').textContent(), old);
    const answer = await platform.http('GET', `/v1/installations/${hook.id}/signing-secret`, { token: tenant.token });
    const leftMs = Date.parse(answer.body.previousExpiresAt) - Date.now();
    assert.ok(leftMs > 23 * 3_600_000 && leftMs <= 24 * 3_600_000, `the old secret's 24 h: ${leftMs} ms left`);
    await shot(page, 'installation-secret-rotated');
    await page.context().close();
  });

  it('shows its organization’s integration: versions with their installations, and its logs as text', async function () {
    const name = await publishExample(platform, tenant, LOGBOOK);
    const installation = await install(platform, tenant, name);
    assert.equal(await (await fetch(`${installation.urls.publicEndpoint}/hello`)).text(), 'hi');
    const page = await signIn();
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('listitem').filter({ hasText: name }).getByRole('link').click();
    const versions = page.getByRole('table', { name: /Versions/ });
    await versions.getByRole('row').filter({ hasText: installation.id }).waitFor();
    assert.deepEqual(await versions.getByRole('row').filter({ hasText: installation.id }).getByRole('cell').allTextContents(), ['1', `1 ${installation.id} `], 'version 1, one installation');
    await page.getByText('[logbook] hello from the endpoint').first().waitFor({ timeout: 30_000 });
    await page.getByLabel('Level (and above)').selectOption('warn');
    await waitFor(async () => ((await page.getByText('[logbook] hello from the endpoint').count()) === 0 ? true : undefined), 30_000, 'info lines filtered out');
    await shot(page, 'integration');
    await page.context().close();
  });

  it('gives a page an integration serves, on the console’s origin, nothing of a signed-in member’s session', async function () {
    const script = "fetch('/console/session').then((r) => r.text()).then((t) => (document.title = 'read: ' + t), () => (document.title = 'refused'))";
    const name = await publishExample(platform, tenant, 'webhook-receiver', {
      edit: (manifest, code) => [manifest, code.replace("if (request.method !== 'POST') return new Response('Method not allowed', { status: 405 });", `if (request.method === 'GET') return new Response(${JSON.stringify(`<!doctype html><title>waiting</title><script>${script}</script>`)}, { headers: { 'content-type': 'text/html' } });`)],
    });
    const page = await signIn();
    const endpoint = (await install(platform, tenant, name, { forward_url: receiver.url })).urls.publicEndpoint;
    await page.goto(endpoint);
    await page.waitForFunction("document.title !== 'waiting'");
    assert.equal(await page.title(), 'refused', 'its script runs in an origin of its own: the console’s session is not its to read');
    await page.context().close();
  });
});

describe('the web console behind a TLS proxy (PLATFORM_BASE_URL https)', function () {
  const platform = new TestPlatform(__filename, { https: true, worker: false });
  before(async () => platform.start());
  after(async () => platform.stop());

  it('signs in with a Secure cookie, ends the browser’s earlier session at the next sign-in, and lets no cache keep the answer', async function () {
    const signIn = (cookie?: string) => platform.http('POST', '/console/session', { body: { token: platform.adminToken }, ...(cookie && { headers: { cookie } }) });
    const first = await signIn();
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const setCookie = first.headers.get('set-cookie')!;
    assert.match(setCookie, /platform_session=[^;]+;.*secure/i);
    assert.match(setCookie, /httponly/i);
    assert.equal(first.headers.get('cache-control'), 'no-store');
    const cookie = setCookie.split(';')[0]!;
    assert.equal((await platform.http('GET', '/console/session', { headers: { cookie } })).status, 200);
    assert.equal((await signIn(cookie)).status, 201);
    assert.equal((await platform.http('GET', '/console/session', { headers: { cookie } })).status, 401, 'the earlier session ended');
  });
});
