import assert from 'node:assert/strict';
import { verifySignature } from '../src/webhooks/signature';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ApiProcess } from './support/api-process';
import { idsOfOneShard } from './support/settings';
import { ScriptedReceiver, type Reply } from './support/receiver';

describe('ingest owned by the engine', function () {
  this.timeout(90_000);
  const platform = new TestPlatform(__filename);
  // A second API process of the same deployment: its own process and client, the same task queue and log.
  let second: ApiProcess;
  const receiver = new ScriptedReceiver();
  let tenant: { org: string; token: string };

  before(async function () {
    await Promise.all([platform.start(), receiver.start()]);
    second = await new ApiProcess(platform).start();
    tenant = await platform.tenant();
  });
  after(async () => Promise.all([platform.stop(), second?.stop(), receiver.stop()]));


  const arrivals = (eventId: string, at = receiver) => at.requests.filter((request) => JSON.parse(request.body).eventId === eventId);

  it('a delivery id from a 202 answers GET /v1/deliveries/:id at once, at least as pending', async function () {
    await platform.webhook(tenant.token, { org: tenant.org, space: 'now' }, receiver.url, { space_content_updated: true });
    const ingest = await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'now'));
    const read = await second.http('GET', `/v1/deliveries/${encodeURIComponent(ingest.body.deliveries[0])}`, { token: tenant.token });
    assert.equal(read.status, 200);
    assert.ok(['pending', 'delivered'].includes(read.body.status), read.body.status);
  });

  it('concurrent repeats of one eventId, through two API processes, answer one body and deliver once', async function () {
    await platform.webhook(tenant.token, { org: tenant.org, space: 'repeat' }, receiver.url, { space_content_updated: true });
    const event = { ...spaceEvent(tenant.org, 'repeat'), eventId: `evt_repeat_${Date.now()}` };
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? second : platform).admin('POST', '/v1/events', event)));
    assert.deepEqual(new Set(answers.map((answer) => answer.status)), new Set([202]));
    for (const answer of answers) assert.deepEqual(answer.body, answers[0]!.body);
    await platform.finalDelivery(answers[0]!.body.deliveries[0], tenant.token);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(arrivals(event.eventId).length, 1);
  });

  it('an event for nobody is recorded too: its repeat answers the same, even after an installation appears', async function () {
    const event = spaceEvent(tenant.org, 'nobody', { eventId: `evt_nobody_${Date.now()}` });
    const first = await platform.admin('POST', '/v1/events', event);
    assert.deepEqual(first.body.deliveries, []);
    await platform.webhook(tenant.token, { org: tenant.org, space: 'nobody' }, receiver.url, { space_content_updated: true });
    assert.deepEqual((await second.admin('POST', '/v1/events', event)).body, first.body);
  });

  describe('changes made through one API process are seen by the next event through the other', function () {
    it('a new installation, a pause, a URL change and a rotation', async function () {
      const other = await new ScriptedReceiver().start();
      try {
        const hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sides' }, receiver.url, { space_content_updated: true });
        // New installation (made through the first) -> fan-out through the second.
        const created = await second.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sides'));
        assert.deepEqual(created.body.deliveries, [`${created.body.eventId}:${hook.id}`]);

        // Pause through the second -> the first's next event records it skipped.
        assert.equal((await second.http('POST', `/v1/installations/${hook.id}/pause`, { token: tenant.token })).status, 200);
        const paused = await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sides'));
        assert.equal((await platform.finalDelivery(paused.body.deliveries[0], tenant.token)).status, 'skipped');
        await second.http('POST', `/v1/installations/${hook.id}/resume`, { token: tenant.token });

        // URL change through the first -> the second's next event goes to the new URL.
        await platform.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: tenant.token, body: { webhook_url: other.url } });
        const moved = await second.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sides'));
        const delivered = await platform.finalDelivery(moved.body.deliveries[0], tenant.token);
        assert.equal(delivered.url, other.url);
        assert.equal(other.requests.length, 1);

        // Rotation through the second -> the next attempt carries the new secret first.
        const rotated = await second.http('POST', `/v1/installations/${hook.id}/signing-secret/rotate`, { token: tenant.token });
        const signed = await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'sides'));
        await platform.finalDelivery(signed.body.deliveries[0], tenant.token);
        const last = other.requests.at(-1)!;
        assert.equal(verifySignature(last.headers['x-platform-signature'] as string, last.body, [rotated.body.secret]).valid, true);
      } finally {
        await other.stop();
      }
    });
  });

  describe('POST /v1/events/batch', function () {
    it('answers one result per event, in order: ids, or that event’s own error', async function () {
      await platform.webhook(tenant.token, { org: tenant.org, space: 'batch' }, receiver.url, { space_content_updated: true });
      const events = [spaceEvent(tenant.org, 'batch'), { type: 'space_content_updated', organizationId: tenant.org }, spaceEvent('no-such-org', 'batch'), spaceEvent(tenant.org, 'batch')];
      const answer = await platform.admin('POST', '/v1/events/batch', { events });
      assert.equal(answer.status, 202);
      const [a, bad, unknown, b] = answer.body.results;
      assert.equal(a.deliveries.length, 1);
      assert.equal(b.deliveries.length, 1);
      assert.equal(bad.error, 'invalid_request');
      assert.deepEqual(bad.details.map((d: any) => d.field).sort(), ['events[1].revisionId', 'events[1].spaceId']);
      assert.equal(unknown.error, 'not_found');
      assert.deepEqual(unknown.details, [{ field: 'events[2].organizationId', message: 'is not a known organization' }]);
      const notObject = await platform.admin('POST', '/v1/events/batch', { events: ['x'] });
      assert.deepEqual(notObject.body.results[0].details, [{ field: 'events[0]', message: 'must be an object' }]);
      await Promise.all([a, b].map((result) => platform.finalDelivery(result.deliveries[0], tenant.token)));
    });

    it(`takes at most 500 events`, async function () {
      const answer = await platform.admin('POST', '/v1/events/batch', { events: Array.from({ length: 501 }, () => spaceEvent(tenant.org, 'batch')) });
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.body.details.map((d: any) => d.field), ['events']);
    });
  });

  it('a receiver that hangs past the 10 s attempt timeout holds back only its own deliveries', async function () {
    const hanging = await new ScriptedReceiver(() => ({ status: 200, delayMs: 60_000 })).start();
    try {
      const slow = await platform.webhook(tenant.token, { org: tenant.org, space: 'slow' }, hanging.url, { space_content_updated: true });
      const fast = await platform.webhook(tenant.token, { org: tenant.org, space: 'slow' }, receiver.url, { space_content_updated: true });
      const started = Date.now();
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await platform.admin('POST', '/v1/events', spaceEvent(tenant.org, 'slow')));
      const fastIds = answers.map((answer) => answer.body.deliveries.find((id: string) => id.endsWith(fast.id)));
      const finals = await platform.finalDeliveries(fastIds, tenant.token);
      assert.deepEqual(finals.map((d) => d.status), Array(5).fill('delivered'));
      // Held back, they would wait for the 10 s timeout of the hanging attempts.
      assert.ok(Date.now() - started < 8000, `the other installation's events took ${Date.now() - started} ms`);
      const slowOne = await platform.http('GET', `/v1/deliveries/${encodeURIComponent(answers[0]!.body.deliveries.find((id: string) => id.endsWith(slow.id)))}`, { token: tenant.token });
      assert.equal(slowOne.body.status, 'pending');
    } finally {
      await hanging.stop();
    }
  });

  /**
   * Two events of one shard to one installation of a fresh organization, on a receiver that
   * refuses the first POST of the first (`refusal`) and answers the second after `slowMs`:
   * how long after its first attempt the refused event came again, and the wait chosen.
   */
  async function retryBesideSlowAnswer(label: string, refusal: Reply, slowMs: number, send: (scene: { org: string; failingId: string; slowId: string; receiver: ScriptedReceiver }) => Promise<string>) {
    const own = await platform.tenant();
    const [failingId, slowId] = idsOfOneShard(`${label}_${own.org}`, 2) as [string, string];
    let failingSeen = 0;
    const scripted = await new ScriptedReceiver((_, request) => (JSON.parse(request.body).eventId === slowId ? { status: 200, delayMs: slowMs } : failingSeen++ === 0 ? refusal : { status: 200 })).start();
    try {
      await platform.webhook(own.token, { org: own.org, space: label }, scripted.url, { space_content_updated: true });
      const final = await platform.finalDelivery(await send({ org: own.org, failingId, slowId, receiver: scripted }), own.token);
      assert.equal(final.status, 'delivered');
      const [first, retry] = arrivals(failingId, scripted);
      const [slow] = arrivals(slowId, scripted);
      return { gapMs: retry!.at - first!.at, chosenMs: final.attempts[0].nextDelayMs as number, slowBeforeRetry: slow!.at < retry!.at };
    } finally {
      await scripted.stop();
    }
  }

  it('a retry goes out when due while first attempts of its installation wait on a slow answer', async function () {
    // The first event's first attempt is refused at once for 3 s (503, Retry-After: 3): time
    // enough, on a loaded machine, for the second to be sent after it; that one takes 6 s.
    const { gapMs, slowBeforeRetry } = await retryBesideSlowAnswer('lane', { status: 503, headers: { 'retry-after': '3' } }, 6000, async ({ org, failingId, slowId, receiver }) => {
      const failing = await platform.admin('POST', '/v1/events', spaceEvent(org, 'lane', { eventId: failingId }));
      await waitFor(async () => receiver.requests.length || undefined, 15_000, 'the first attempt');
      await platform.admin('POST', '/v1/events', spaceEvent(org, 'lane', { eventId: slowId }));
      return failing.body.deliveries[0];
    });
    assert.ok(slowBeforeRetry, 'the slow attempt was in flight before the retry was due');
    // The wait the receiver asked for is 3 s; behind the slow answer it would be over 6 s.
    assert.ok(gapMs >= 3000 && gapMs < 5000, `retry came ${Math.round(gapMs)} ms after the first attempt`);
  });

  it('a retry waits from the end of its attempt: time spent on the rest of its batch counts', async function () {
    // One batch: the first event is refused for 3 s (503, Retry-After: 3), the second answered after 5 s.
    const { gapMs, chosenMs } = await retryBesideSlowAnswer('wait', { status: 503, headers: { 'retry-after': '3' } }, 5000, async ({ org, failingId, slowId }) => {
      const answer = await platform.admin('POST', '/v1/events/batch', { events: [spaceEvent(org, 'wait', { eventId: failingId }), spaceEvent(org, 'wait', { eventId: slowId })] });
      return answer.body.results[0].deliveries[0];
    });
    assert.equal(chosenMs, 3000);
    // The shard hears of the refusal when the batch returns (5 s), its wait over by then;
    // waiting it again from there would put the retry at 5 s + 3 s.
    assert.ok(gapMs >= 5000 && gapMs < 5000 + chosenMs, `retry came ${Math.round(gapMs)} ms after the first attempt`);
  });
});
