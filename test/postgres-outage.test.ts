import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { testDatabaseUrl } from './support/settings';
import { TcpProxy } from './support/tcp-proxy';

/** The platform's delivery log reaches PostgreSQL through a forwarder the test takes away. */
describe('the platform while PostgreSQL cannot be reached', function () {
  this.timeout(60_000);
  const receiver = new ScriptedReceiver();
  let proxy: TcpProxy;
  let platform: TestPlatform;

  before(async () => {
    const direct = new URL(await testDatabaseUrl('postgres', 'outage'));
    proxy = await new TcpProxy(direct.hostname, Number(direct.port)).start();
    const proxied = new URL(direct);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    platform = new TestPlatform(__filename, { databaseUrl: proxied.href });
    await Promise.all([platform.start(), receiver.start()]);
  });
  after(async () => Promise.all([platform?.stop(), receiver.stop(), proxy?.stop()]));

  const listDeliveries = (token: string) => platform.http('GET', '/v1/deliveries', { token });

  function assertUnavailable(answer: { status: number; body: any; headers: Headers }, what: RegExp): void {
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.equal(answer.headers.get('retry-after'), '1');
    assert.equal(answer.body.error, 'unavailable');
    assert.match(answer.body.message, what);
  }

  it('answers 503 with Retry-After, not 500, while connections are refused; an event refused then is delivered once when retried', async function () {
    const tenant = await platform.tenant();
    await platform.webhook(tenant.token, { org: tenant.org, space: 'refused' }, receiver.url, { space_content_updated: true });
    assert.equal((await listDeliveries(tenant.token)).status, 200);

    await proxy.refuse();
    // The first may still meet a pooled connection as it ends; the next must connect, refused.
    for (let i = 0; i < 3; i++) assertUnavailable(await listDeliveries(tenant.token), /delivery log/);
    const ready = await platform.http('GET', '/readyz');
    assert.equal(ready.status, 503);
    // Named, but not where it is: the route is open to anyone, and the error said host and port.
    assert.deepEqual(ready.body.details, [{ field: 'database', message: 'does not answer' }]);
    const event = { ...spaceEvent(tenant.org, 'refused'), eventId: 'evt_while_refused' };
    assertUnavailable(await platform.admin('POST', '/v1/events', event), /retry it with the same eventId/);

    await proxy.restore();
    await waitFor(async () => ((await listDeliveries(tenant.token)).status === 200 ? true : undefined), 5000, 'the list served again', 250);
    const accepted = await platform.admin('POST', '/v1/events', event);
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    assert.equal((await platform.finalDelivery(accepted.body.deliveries[0], tenant.token)).status, 'delivered');
    assert.equal(receiver.requests.filter((request) => JSON.parse(request.body).eventId === event.eventId).length, 1);
  });

  it('answers 503 within the connect timeout, not never, while connections are accepted and never answered', async function () {
    const tenant = await platform.tenant();
    proxy.silence();
    try {
      // A request may first meet a pooled connection as it ends (503 at once); one that has
      // to connect waits for the connect timeout, 5 s, and no longer.
      const waits: number[] = [];
      while (waits.length < 3 && !waits.some((waited) => waited >= 4000)) {
        const started = Date.now();
        assertUnavailable(await listDeliveries(tenant.token), /delivery log/);
        waits.push(Date.now() - started);
      }
      const connecting = waits.find((waited) => waited >= 4000);
      assert.ok(connecting !== undefined && connecting < 8000, `answered after ${waits.join(', ')} ms: the connect timeout is 5 s`);
    } finally {
      await proxy.restore();
    }
    await waitFor(async () => ((await listDeliveries(tenant.token)).status === 200 ? true : undefined), 5000, 'the list served again', 250);
  });
});
