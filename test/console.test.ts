import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { PortalLinks } from '../src/api/portal-links';
import { verifySignature } from '../src/webhooks/signature';
import { runCli } from './support/cli';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/** Debian's chromium (`.ci/run` installs it); playwright-core drives it and downloads no browser of its own. */
const CHROMIUM = process.env.PLATFORM_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** Each page the test sees, saved for a person to look at. */
const SCREENSHOTS = path.join(__dirname, '..', '..', 'test-results', 'console');

/** A payload field that would run if it were ever taken for markup. */
const HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">';

describe('the web console, in a real browser', function () {
  const platform = new TestPlatform(__filename);
  let failing = true;
  const receiver = new ScriptedReceiver(() => ({ status: failing ? 400 : 200 }));
  let browser: Browser;
  let tenant: { org: string; token: string };
  let other: { org: string; token: string };
  let failedId = '';
  let hook: { id: string };

  before(async function () {
    mkdirSync(SCREENSHOTS, { recursive: true });
    [browser] = await Promise.all([chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }), platform.start(), receiver.start()]);
    [tenant, other] = [await platform.tenant(), await platform.tenant()];
    hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp' }, receiver.url, { space_content_updated: true });
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp', { revisionId: HOSTILE }));
    failedId = ingest.body.deliveries[0];
    assert.equal((await platform.finalDelivery(failedId, tenant.token)).status, 'failed');
  });
  after(async () => Promise.all([browser?.close(), platform.stop(), receiver.stop()]));

  const signIn = async (token: string, viewport = { width: 1280, height: 900 }): Promise<Page> => {
    const page = await (await browser.newContext({ viewport })).newPage();
    await page.goto(`${platform.api.url}/console`);
    await page.getByLabel('Token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    return page;
  };
  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

  it('serves its page under a strict Content-Security-Policy, and refuses a token the platform did not issue', async function () {
    const answer = await platform.http('GET', '/console');
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-security-policy') ?? '', /default-src 'none'; script-src 'self'/);
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${platform.api.url}/console`);
    await page.getByLabel('Token').fill('ptk_not_a_token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await shot(page, 'sign-in-refused');
    await page.context().close();
  });

  it('signs a member in with a cookie scripts cannot read, finds the failed delivery, its attempts and its payload as text, and runs none of it', async function () {
    const page = await signIn(tenant.token);
    const cookie = (await page.context().cookies()).find((c) => c.name === 'platform_session');
    assert.ok(cookie, 'the session cookie');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(await page.evaluate("document.cookie.includes('platform_session')"), false);
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('row').filter({ hasText: 'failed' }).first().waitFor();
    await shot(page, 'deliveries-failed');
    await page.getByRole('row').filter({ hasText: failedId.split(':')[0]! }).getByRole('link').click();
    await page.getByRole('heading', { name: `Delivery ${failedId}` }).waitFor();
    assert.ok((await page.getByLabel('Payload').textContent())!.includes(JSON.stringify(HOSTILE)), 'the payload shown as the receiver got it, as text');
    assert.equal(await page.getByRole('row').filter({ hasText: '400' }).count(), 1, 'its one attempt, answered 400');
    assert.equal(await page.evaluate('window.__pwned'), undefined, 'nothing of the payload ran');
    await shot(page, 'delivery-failed');
    await page.context().close();
  });

  it('replays a failed delivery: the receiver gets it, and the new delivery shows delivered', async function () {
    failing = false;
    const page = await signIn(tenant.token);
    await page.goto(`${platform.api.url}/console/deliveries/${encodeURIComponent(failedId)}`);
    const before = receiver.requests.length;
    await page.getByRole('button', { name: 'Replay' }).click();
    const replayLink = page.getByRole('status').getByRole('link');
    await replayLink.waitFor();
    const replayId = (await replayLink.textContent())!;
    assert.match(replayId, /:replay-1$/);
    await waitFor(async () => (receiver.requests.length > before ? true : undefined), 30_000, 'the replay at the receiver');
    assert.equal((await platform.finalDelivery(replayId, tenant.token)).status, 'delivered');
    await replayLink.click();
    await page.getByRole('heading', { name: `Delivery ${replayId}` }).waitFor();
    await page.locator('.status-delivered').first().waitFor();
    await shot(page, 'delivery-replayed');
    await page.context().close();
  });

  it('shows a new delivery without a reload, and refuses a change without the session’s CSRF token', async function () {
    const page = await signIn(tenant.token);
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp'));
    const eventId: string = ingest.body.eventId;
    await page.getByRole('row').filter({ hasText: eventId }).waitFor({ timeout: 30_000 });
    const forged = await page.evaluate(async (id) => (await fetch(`/v1/deliveries/${encodeURIComponent(id)}/replay`, { method: 'POST' })).status, failedId);
    assert.equal(forged, 403);
    await shot(page, 'deliveries-live');
    await page.context().close();
  });

  it('shows a member of another organization nothing of this one, and ends a session at sign-out', async function () {
    const page = await signIn(other.token);
    await page.getByText('No deliveries match.').waitFor();
    await page.goto(`${platform.api.url}/console/deliveries/${encodeURIComponent(failedId)}`);
    await page.getByRole('alert').waitFor();
    assert.match((await page.getByRole('alert').textContent())!, /not found/i);
    await shot(page, 'other-organization');
    const cookie = (await page.context().cookies()).find((c) => c.name === 'platform_session')!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    const after = await platform.http('GET', '/console/session', { headers: { cookie: `platform_session=${cookie.value}` } });
    assert.equal(after.status, 401, 'the old cookie opens nothing');
    await page.context().close();
  });

  it('opens a delivery portal link on its installation alone: its deliveries, replay, and a secret rotation both signatures verify across', async function () {
    const link = await platform.http('POST', `/v1/installations/${hook.id}/portal-link`, { token: tenant.token, body: { expiresInSeconds: 600 } });
    assert.equal(link.status, 201);
    assert.ok(Date.parse(link.body.expiresAt) > Date.now() + 590_000);
    const portalToken = new URL(link.body.url).pathname.split('/')[2]!;
    const fromCli = await runCli(['installations', 'portal-link', hook.id, '--expires', '120'], { env: { ...process.env, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: tenant.token } });
    assert.equal(fromCli.code, 0, fromCli.stderr);
    assert.match(fromCli.stdout, new RegExp(`^${platform.api.url}/portal/plk_\\S+\nworks until `));
    assert.equal((await platform.http('POST', `/v1/installations/${hook.id}/portal-link`, { token: other.token, body: {} })).status, 404, 'not for another organization');
    // Anything outside its installation is not there, whatever the route.
    for (const route of ['/v1/installations', `/v1/orgs/${tenant.org}`, '/v1/integrations', `/v1/deliveries?installation=ins_somebodyelse`]) {
      assert.equal((await platform.http('GET', route, { token: portalToken })).status, 404, route);
    }
    assert.equal((await platform.http('POST', '/console/session', { body: { token: portalToken } })).status, 401, 'a portal link does not sign in to the console');
    const seen = await platform.http('GET', `/v1/deliveries/${encodeURIComponent(failedId)}`, { token: portalToken });
    assert.equal(seen.headers.get('cache-control'), 'no-store');
    assert.ok(seen.body.attempts.length > 0 && seen.body.attempts.every((attempt: { workflow?: unknown }) => attempt.workflow === undefined), 'no workflow runs for the receiver');
    assert.ok((await platform.http('GET', `/v1/deliveries/${encodeURIComponent(failedId)}`, { token: tenant.token })).body.attempts[0].workflow, 'the member sees them');
    const page = await (await browser.newContext()).newPage();
    await page.goto(link.body.url);
    await page.getByRole('heading', { name: 'Webhook deliveries' }).waitFor();
    await page.getByRole('row').filter({ hasText: failedId.split(':')[0]! }).first().waitFor();
    assert.equal(await page.getByLabel('Organization').count(), 0, 'no organization to choose: one installation');
    await shot(page, 'portal-deliveries');
    await page.getByRole('row').filter({ hasText: failedId.split(':')[0]! }).filter({ hasText: 'failed' }).getByRole('link').click();
    await page.getByRole('button', { name: 'Replay' }).click();
    assert.match((await page.getByRole('status').getByRole('link').textContent())!, /:replay-\d+$/, 'replayed from the portal');
    await page.getByRole('link', { name: 'Deliveries' }).click();
    // Rotating from the portal: the next delivery carries both signatures, each verifying with its secret.
    const oldSecret = (await platform.http('GET', `/v1/installations/${hook.id}/signing-secret`, { token: tenant.token })).body.secret;
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('status').filter({ hasText: 'Rotated' }).waitFor();
    const newSecret = (await page.getByLabel('Secret value').textContent())!;
    assert.notEqual(newSecret, oldSecret);
    await shot(page, 'portal-secret-rotated');
    const before = receiver.requests.length;
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp'));
    const received = await waitFor(async () => receiver.requests.slice(before).find((request) => request.body.includes(ingest.body.eventId)), 30_000, 'the delivery after the rotation');
    const header = received.headers['x-platform-signature'] as string;
    assert.equal(header.match(/v1=/g)?.length, 2, header);
    assert.ok(verifySignature(header, received.body, newSecret).valid, 'with the new secret');
    assert.ok(verifySignature(header, received.body, oldSecret).valid, 'with the old one, still valid');
    await page.context().close();
  });

  it('lets the pages of the sites its organization names embed a portal link, and no other', async function () {
    const link = (await platform.http('POST', `/v1/installations/${hook.id}/portal-link`, { token: tenant.token, body: {} })).body.url as string;
    const embedder = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>Partner</title><h1>Partner site</h1><iframe title="Webhook deliveries" src="${link}" width="900" height="600"></iframe>`));
    await new Promise<void>((resolve) => embedder.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(embedder.address() as AddressInfo).port}`;
    try {
      const frameAncestors = async () => /frame-ancestors ([^;]+)/.exec((await platform.http('GET', new URL(link).pathname)).headers.get('content-security-policy')!)![1];
      assert.equal(await frameAncestors(), "'none'", 'by default, no site');
      const refused = await platform.http('PUT', `/v1/orgs/${tenant.org}/portal-frame-ancestors`, { token: tenant.token, body: { origins: ['https://a.example/path'] } });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.details[0].field, 'origins[0]');
      assert.equal((await platform.http('PUT', `/v1/orgs/${tenant.org}/portal-frame-ancestors`, { token: other.token, body: { origins: [origin] } })).status, 404, 'not another organization’s member');
      const set = await platform.http('PUT', `/v1/orgs/${tenant.org}/portal-frame-ancestors`, { token: tenant.token, body: { origins: [origin] } });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(set.body.portalFrameAncestors, [origin]);
      assert.equal(await frameAncestors(), origin);
      const page = await (await browser.newContext()).newPage();
      await page.goto(origin);
      await page.frameLocator('iframe').getByRole('heading', { name: 'Webhook deliveries' }).waitFor();
      await page.frameLocator('iframe').getByRole('row').filter({ hasText: failedId.split(':')[0]! }).first().waitFor();
      await shot(page, 'portal-embedded');
      await page.context().close();
      assert.equal((await platform.http('PUT', `/v1/orgs/${tenant.org}/portal-frame-ancestors`, { token: tenant.token, body: { origins: [] } })).status, 200);
      assert.equal(await frameAncestors(), "'none'");
    } finally {
      embedder.close();
    }
  });

  it('refuses an expired portal link and an altered one with a page that says so', async function () {
    const expired = new PortalLinks(process.env.TEST_ENCRYPTION_KEY!).issue(hook.id, tenant.org, 60, Date.now() - 120_000).token;
    const good = new PortalLinks(process.env.TEST_ENCRYPTION_KEY!).issue(hook.id, tenant.org, 60).token;
    const altered = good.replace(/.(?=\.)/, (c) => (c === 'A' ? 'B' : 'A'));
    const page = await (await browser.newContext()).newPage();
    for (const [token, says] of [[expired, /expired/], [altered, /not valid/]] as const) {
      const answer = await page.goto(`${platform.api.url}/portal/${token}`);
      assert.equal(answer!.status(), 401);
      assert.match((await page.getByRole('alert').textContent())!, says);
      assert.equal((await platform.http('GET', '/v1/deliveries', { token })).status, 401, 'nor does the API take it');
    }
    await shot(page, 'portal-link-refused');
    await page.context().close();
  });

  it('reads on a 375 px wide screen without scrolling sideways', async function () {
    const page = await signIn(tenant.token, { width: 375, height: 800 });
    await page.getByRole('row').nth(1).waitFor();
    assert.ok(await page.evaluate('document.documentElement.scrollWidth <= 375'), 'the page fits 375 px (tables scroll inside their frame)');
    await shot(page, 'deliveries-375px');
    await page.context().close();
  });
});
