import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/** Many installations whose receivers hang, beside one that answers: the worker's slots. */
describe('many slow receivers at once', function () {
  this.timeout(120_000);
  const platform = new TestPlatform(__filename);
  /** Hangs 8 s (under the 10 s attempt timeout) for every space but "fast". */
  const receiver = new ScriptedReceiver((_n, request) => (JSON.parse(request.body).spaceId === 'fast' ? { status: 200 } : { status: 200, delayMs: 8000 }));
  /** Above the worker's old 200 slots; under the HTTP agent's 256 sockets a host, which would measure the agent instead. */
  const HANGING = 210;

  before(async () => Promise.all([platform.start(), receiver.start()]));
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it(`${HANGING} installations whose receivers hang (a batch each in flight) do not hold back another installation's event`, async function () {
    const tenant = await platform.tenant();
    const spaces = Array.from({ length: HANGING }, (_, i) => `hang-${i}`);
    // Ten at a time, each tried again on a 503 (the engine is busy with the others).
    const install = (space: string) => waitFor(() => platform.webhook(tenant.token, { org: tenant.org, space }, receiver.url, { space_content_updated: true }).catch(() => undefined), 30_000, `an installation for ${space}`, 200);
    for (let i = 0; i < spaces.length; i += 10) await Promise.all(spaces.slice(i, i + 10).map(install));
    await platform.webhook(tenant.token, { org: tenant.org, space: 'fast' }, receiver.url, { space_content_updated: true });
    // Each event until accepted, with its eventId (a 503 means "try again" while the engine is busy).
    const accepted = new Map<string, number>();
    const ingest = (space: string) => {
      const event = spaceEvent(tenant.org, space, { eventId: `evt_${space}_${tenant.org}` });
      return waitFor(async () => {
        const answer = await platform.admin('POST', '/v1/events', event);
        if (answer.status !== 202) return undefined;
        accepted.set(space, performance.now());
        return answer;
      }, 30_000, `the event of ${space}`, 200);
    };
    await Promise.all(spaces.map(ingest));
    // At least 200 hanging batches are in flight (their POSTs arrived) when the other event comes.
    await waitFor(async () => (receiver.requests.length >= 200 ? true : undefined), 20_000, 'the hanging POSTs');
    const sent = performance.now();
    const fast = await ingest('fast');
    const delivery = await platform.finalDelivery(fast.body.deliveries[0], tenant.token);
    assert.equal(delivery.status, 'delivered');
    // At the receiver well within a hang (8 s): it waited for no hanging batch's slot.
    const took = receiver.requests.find((request) => JSON.parse(request.body).spaceId === 'fast')!.at - sent;
    assert.ok(took < 5000, `the other installation's event took ${Math.round(took)} ms beside ${receiver.requests.length - 1} hanging batches`);
    // Every hanging batch had its slot too: each POST came within a hang of its event's 202, never after
    // another's hang freed a slot. (Measured per event: under load, ingesting all 210 can itself take longer than a hang.)
    await waitFor(async () => (receiver.requests.length >= HANGING + 1 ? true : undefined), 20_000, 'every POST');
    const late = receiver.requests
      .map((request) => ({ space: JSON.parse(request.body).spaceId as string, at: request.at }))
      .filter(({ space, at }) => at - accepted.get(space)! >= 8000);
    assert.deepEqual(late, [], 'POSTs that came a hang or more after their event was accepted');
  });
});
