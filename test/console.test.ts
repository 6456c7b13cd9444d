import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
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

  before(async function () {
    mkdirSync(SCREENSHOTS, { recursive: true });
    [browser] = await Promise.all([chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }), platform.start(), receiver.start()]);
    [tenant, other] = [await platform.tenant(), await platform.tenant()];
    await platform.webhook(tenant.token, { org: tenant.org, space: 'sp' }, receiver.url, { space_content_updated: true });
    const ingest = await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sp', { revisionId: HOSTILE }));
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
    const ingest = await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sp'));
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

  it('reads on a 375 px wide screen without scrolling sideways', async function () {
    const page = await signIn(tenant.token, { width: 375, height: 800 });
    await page.getByRole('row').nth(1).waitFor();
    assert.ok(await page.evaluate('document.documentElement.scrollWidth <= 375'), 'the page fits 375 px (tables scroll inside their frame)');
    await shot(page, 'deliveries-375px');
    await page.context().close();
  });
});
