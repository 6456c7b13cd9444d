import assert from 'node:assert/strict';
import http from 'node:http';
import { isPublicAddress } from '../src/net/addresses';
import { webhookGuard } from '../src/net/guards';
import { PlatformPorts } from '../src/net/platform-ports';
import { assertWebhookDestination } from '../src/webhooks/url-guard';
import { TestPlatform, spaceEvent } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

const REFUSED = ['http://127.0.0.1/', 'http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data', 'http://[::1]:8080/', 'http://[::ffff:127.0.0.1]/', 'http://localhost:9/hook', 'http://192.168.1.10/', 'http://172.16.0.1/', 'http://[fe80::1]/', 'http://[fc00::1]/', 'http://0.0.0.0/', 'http://100.64.0.1/', 'http://[::127.0.0.1]/', 'http://2130706433/', 'http://0x7f.1/'];

const strictGuard = webhookGuard(false, new PlatformPorts());
const lenientGuard = webhookGuard(true, new PlatformPorts());

describe('webhook URL guard', function () {
  describe('addresses', function () {
    it('refuses loopback, private, link-local, shared and unspecified, IPv4-mapped included', function () {
      for (const address of ['127.0.0.1', '10.1.2.3', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fc00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::127.0.0.1', '::7f00:1', '224.0.0.1']) {
        assert.equal(isPublicAddress(address), false, address);
      }
    });
    it('accepts public unicast addresses', function () {
      for (const address of ['8.8.8.8', '203.0.114.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(isPublicAddress(address), true, address);
    });
    it('refuses every listed URL at configuration time, and other schemes always', async function () {
      for (const url of REFUSED) await assert.rejects(assertWebhookDestination(url, strictGuard), /not a public address/, url);
      await assert.rejects(assertWebhookDestination('ftp://8.8.8.8/', lenientGuard), /http/);
      await assert.rejects(assertWebhookDestination('http://user:pw@8.8.8.8/', lenientGuard), /credentials/);
      assert.equal((await assertWebhookDestination('https://8.8.8.8/hook', strictGuard)).hostname, '8.8.8.8');
      assert.equal((await assertWebhookDestination('http://127.0.0.1/', lenientGuard)).hostname, '127.0.0.1');
    });
    it('refuses at connection time a host that resolves to loopback', async function () {
      const receiver = await new ScriptedReceiver().start();
      const port = new URL(receiver.url).port;
      const error = await new Promise<Error>((resolve) => {
        const request = http.request({ host: 'localhost', port, path: '/hook', method: 'POST', lookup: strictGuard.lookup(Number(port)) as never });
        request.on('error', resolve);
        request.on('response', () => resolve(new Error('connected')));
        request.end();
      });
      await receiver.stop();
      assert.match(error.message, /localhost resolved to (127\.0\.0\.1|::1), which is not a public address/);
      assert.equal(receiver.requests.length, 0);
    });
  });

  describe('with PLATFORM_ALLOW_PRIVATE_TARGETS off', function () {
    const strict = new TestPlatform(__filename, { allowPrivateTargets: false });
    // Same namespace and task queue, but its API accepts private targets: what it stores
    // stands for a host whose DNS answer turned private after configuration.
    let lenientApi: TestPlatform;
    const receiver = new ScriptedReceiver();
    let tenant: { org: string; token: string };

    before(async function () {
      await strict.start();
      // One deployment: the same administrator and the same delivery log.
      lenientApi = new TestPlatform(__filename, { allowPrivateTargets: true, worker: false, adminToken: strict.adminToken, databaseUrl: strict.databaseUrl });
      await Promise.all([lenientApi.start(), receiver.start()]);
      tenant = await strict.tenant();
    });
    after(async () => Promise.all([strict.stop(), lenientApi.stop(), receiver.stop()]));

    it('the API refuses each private URL with a 400 naming configuration.webhook_url', async function () {
      for (const url of REFUSED) {
        const answer = await strict.http('POST', '/v1/integrations/webhook/installations', { token: tenant.token, body: { target: { org: tenant.org, space: 's' }, configuration: { webhook_url: url } } });
        assert.equal(answer.status, 400, url);
        assert.deepEqual(answer.body.details.map((d: any) => d.field), ['configuration.webhook_url'], url);
      }
    });

    it('the worker refuses the connection when the address is private at delivery time: failed, not retried, nothing sent', async function () {
      const hook = await lenientApi.webhook(tenant.token, { org: tenant.org, space: 'rebind' }, receiver.url.replace('127.0.0.1', 'localhost'), { space_content_updated: true });
      const ingest = await strict.ingest(spaceEvent(tenant.org, 'rebind'));
      assert.deepEqual(ingest.body.deliveries, [`${ingest.body.eventId}:${hook.id}`]);
      const delivery = await strict.finalDelivery(ingest.body.deliveries[0], tenant.token);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.attempts.length, 1);
      assert.equal(delivery.attempts[0].error, 'blocked_destination');
      assert.match(delivery.attempts[0].errorMessage, /not a public address/);
      assert.equal(receiver.requests.length, 0);
    });

    it('a host that does not resolve is a DNS failure, retried, not a blocked destination', async function () {
      const hook = await lenientApi.webhook(tenant.token, { org: tenant.org, space: 'nxdomain' }, 'http://does-not-exist.invalid/hook', { space_content_updated: true });
      const ingest = await strict.ingest(spaceEvent(tenant.org, 'nxdomain'));
      const delivery = await strict.finalDelivery(ingest.body.deliveries[0], tenant.token);
      assert.equal(delivery.installationId, hook.id);
      assert.equal(delivery.status, 'failed');
      assert.deepEqual(delivery.attempts.map((a: any) => a.error), ['dns_failure', 'dns_failure', 'dns_failure', 'dns_failure']);
    });
  });
});
