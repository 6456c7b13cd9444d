import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

describe('throttling: max_per_second per installation', function () {
  const platform = new TestPlatform(__filename);
  const steady = new ScriptedReceiver(() => ({ status: 200 }));
  // Its first POST asks for 2 s of quiet.
  const asking = new ScriptedReceiver((n) => (n === 0 ? { status: 429, headers: { 'Retry-After': '2' } } : { status: 200 }));
  let tenant: { org: string; token: string };

  before(async function () {
    await Promise.all([platform.start(), steady.start(), asking.start()]);
    tenant = await platform.tenant();
  });
  after(async () => Promise.all([platform.stop(), steady.stop(), asking.stop()]));

  /** Sends `count` events at once to a space; answers their delivery ids. */
  async function burst(space: string, count: number): Promise<string[]> {
    const answer = await platform.admin('POST', '/v1/events/batch', { events: Array.from({ length: count }, () => spaceEvent(tenant.org, space)) });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    return answer.body.results.map((result: { deliveries: string[] }) => result.deliveries[0]);
  }
  const startsOf = (deliveries: any[]) => deliveries.flatMap((delivery) => delivery.attempts.map((attempt: { startedAt: string }) => Date.parse(attempt.startedAt))).sort((a: number, b: number) => a - b);

  it('sends no faster than its max_per_second: the rest wait their turn, as no attempt', async function () {
    await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-20' }, steady.url, { space_content_updated: true, max_per_second: 20 });
    const burstAt = Date.now();
    const ids = await burst('sp-20', 100);
    const deliveries = await platform.finalDeliveries(ids, tenant.token, 60_000);
    const other = deliveries.find((delivery) => delivery.status !== 'delivered' || delivery.attempts.length !== 1);
    assert.equal(other, undefined, `each delivered at its first attempt (waiting is no attempt): ${JSON.stringify(other)}`);
    // Each send takes a slot 50 ms after the one before, the first no earlier than the burst,
    // and never goes before its slot: the k-th goes 50·k ms after the burst at the earliest.
    // (Not the span from the first send: on a busy machine the first went 435 ms late.)
    const early = startsOf(deliveries).findIndex((start: number, k: number) => start - burstAt < 50 * k - 1);
    assert.equal(early, -1, `send ${early} went ${startsOf(deliveries)[early] - burstAt} ms after the burst, before its slot at ${50 * early} ms`);
    assert.equal(steady.requests.length, 100);
  });

  it('a 429 with Retry-After holds all its sends for that long, then they go on', async function () {
    // One a second: the 429 is recorded long before the next slot's send looks (a send already under way when it comes is not taken back).
    await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-429' }, asking.url, { space_content_updated: true, max_per_second: 1 });
    const ids = await burst('sp-429', 4);
    const deliveries = await platform.finalDeliveries(ids, tenant.token, 60_000);
    assert.ok(deliveries.every((delivery) => delivery.status === 'delivered'));
    const [first, next] = asking.requests;
    assert.ok(next!.at - first!.at >= 2000, `the next POST came ${Math.round(next!.at - first!.at)} ms after the 429`);
    assert.equal(deliveries.filter((delivery) => delivery.attempts.length === 2).length, 1, 'only the one answered 429 was attempted twice');
  });

  it('refuses a rate that is not above 0, naming the field', async function () {
    const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp-bad' }, steady.url, { space_content_updated: true });
    for (const value of [0, -5, 20_000, 'fast']) {
      const refused = await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { max_per_second: value } });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.deepEqual(refused.body.details.map((detail: { field: string }) => detail.field), ['configuration.max_per_second']);
    }
    await waitFor(async () => ((await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { max_per_second: null } })).status === 200 ? true : undefined), 10_000, 'unset');
  });
});
