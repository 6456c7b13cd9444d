import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createExampleReceiver, signatureHeader, toNodeListener, verifySignature, type WebhookEvent } from '../src/receiver';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';

describe('receiver helpers', function () {
  describe('verifySignature', function () {
    const body = '{"eventId":"evt_1"}';
    const now = 1_800_000_000;
    it('accepts a matching v1 among several, and rejects stale, missing and malformed headers', function () {
      const header = signatureHeader(body, ['whsec_new', 'whsec_old'], now);
      assert.deepEqual(verifySignature(header, body, 'whsec_old', { now }), { valid: true, timestamp: now });
      assert.equal(verifySignature(header, body, ['whsec_x', 'whsec_new'], { now }).valid, true);
      assert.equal(verifySignature(header, `${body} `, 'whsec_new', { now }).valid, false);
      assert.deepEqual(verifySignature(header, body, 'whsec_new', { now: now + 301 }), { valid: false, reason: 'signature timestamp is outside the tolerance' });
      assert.equal(verifySignature(header, body, 'whsec_new', { now: now + 301, toleranceSeconds: 600 }).valid, true);
      assert.deepEqual(verifySignature(undefined, body, 'whsec_new', { now }), { valid: false, reason: 'missing signature header' });
      assert.deepEqual(verifySignature(`v1=${'a'.repeat(64)}`, body, 'whsec_new', { now }), { valid: false, reason: 'signature header has no timestamp' });
      assert.deepEqual(verifySignature(`t=${now}`, body, 'whsec_new', { now }), { valid: false, reason: 'signature header has no v1 signature' });
      assert.deepEqual(verifySignature(`t=${now},v1=zz`, body, 'whsec_new', { now }), { valid: false, reason: 'signature header has no v1 signature' });
    });
  });

  describe('the example receiver behind a real delivery', function () {
    const platform = new TestPlatform(__filename);
    const handled: WebhookEvent[] = [];
    /** Requests answered, each counted once what it would hand to onEvent (run after the answer, on setImmediate) has been. */
    let settled = 0;
    let server: http.Server;
    let url = '';
    let tenant: { org: string; token: string };
    let hook: { id: string; secret: string };
    // The receiver holds this array; tests swap its content to play a misconfigured receiver.
    const secrets: string[] = [];
    const useSecret = (secret: string) => secrets.splice(0, secrets.length, secret);

    before(async function () {
      await platform.start();
      tenant = await platform.tenant();
      const receiver = createExampleReceiver({ secrets, onEvent: (event) => void handled.push(event) });
      const listener = toNodeListener(receiver);
      server = http.createServer((req, res) => {
        res.on('finish', () => setImmediate(() => (settled += 1)));
        listener(req, res);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp' }, url, { space_content_updated: true });
      useSecret(hook.secret);
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await platform.stop();
    });

    it('accepts a signed delivery once, and ignores its replay by eventId', async function () {
      const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp'));
      const delivery = await platform.finalDelivery(ingest.body.deliveries[0], tenant.token);
      assert.equal(delivery.status, 'delivered');
      assert.equal(delivery.attempts[0].responseBody, '{"received":true}');
      await waitFor(async () => (handled.length === 1 ? true : undefined), 5000, 'the handler');
      assert.equal(handled[0]!.eventId, ingest.body.eventId);
      const replay = await platform.http('POST', `/v1/deliveries/${delivery.id}/replay`, { token: tenant.token });
      assert.equal((await platform.finalDelivery(replay.body.id, tenant.token)).status, 'delivered');
      await waitFor(async () => (settled >= 2 ? true : undefined), 5000, 'the replay to be settled by the receiver');
      assert.equal(handled.length, 1, 'a repeated eventId is not handled again');
    });

    it('answers 405 to GET and 401 with {error} to a bad signature', async function () {
      const get = await fetch(url);
      assert.equal(get.status, 405);
      assert.equal(await get.text(), 'Method not allowed');
      const bad = await fetch(url, { method: 'POST', headers: { 'X-Platform-Signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` }, body: '{}' });
      assert.equal(bad.status, 401);
      assert.deepEqual(await bad.json(), { error: 'no signature matches' });
      const none = await fetch(url, { method: 'POST', body: '{}' });
      assert.deepEqual(await none.json(), { error: 'missing signature header' });
    });

    it('a delivery it rejects (wrong secret) ends failed after one attempt: 401 is not retried', async function () {
      useSecret('whsec_wrong');
      const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp'));
      const delivery = await platform.finalDelivery(ingest.body.deliveries[0], tenant.token);
      useSecret(hook.secret);
      assert.equal(delivery.status, 'failed');
      assert.deepEqual(delivery.attempts.map((a: any) => a.statusCode), [401]);
      assert.equal(delivery.attempts[0].responseBody, '{"error":"no signature matches"}');
    });
  });
});
