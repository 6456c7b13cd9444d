import assert from 'node:assert/strict';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/** Many installations whose receivers hang, beside one that answers: the worker's slots. */
describe('many slow receivers at once', function () {
  this.timeout(120_000);
  const platform = new TestPlatform(__filename);
  /** Above the worker's old 200 slots; under the HTTP agent's 256 sockets a host, which would measure the agent instead. */
  const HANGING = 210;
  /**
   * Every space but "fast" hangs until all HANGING + 1 POSTs have arrived, 9 s at most (under
   * the 10 s attempt timeout): a POST that needed a hanging one's slot could only come after
   * that one was answered, however long ingest takes on a loaded machine.
   */
  let allArrived!: () => void;
  const arrived = new Promise<void>((resolve) => (allArrived = resolve));
  const receiver = new ScriptedReceiver((n, request) => {
    if (n + 1 >= HANGING + 1) allArrived();
    return JSON.parse(request.body).spaceId === 'fast' ? { status: 200 } : { status: 200, delayMs: 9000, until: arrived };
  });

  before(async () => Promise.all([platform.start(), receiver.start()]));
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it(`${HANGING} installations whose receivers hang (a batch each in flight) do not hold back another installation's event`, async function () {
    const tenant = await platform.tenant();
    const spaces = Array.from({ length: HANGING }, (_, i) => `hang-${i}`);
    // Ten at a time, each tried again on a 503 (the engine is busy with the others).
    const install = (space: string) => waitFor(() => platform.webhook(tenant.token, { org: tenant.org, space }, receiver.url, { space_content_updated: true }).catch(() => undefined), 30_000, `an installation for ${space}`, 200);
    for (let i = 0; i < spaces.length; i += 10) await Promise.all(spaces.slice(i, i + 10).map(install));
    await platform.webhook(tenant.token, { org: tenant.org, space: 'fast' }, receiver.url, { space_content_updated: true });
    const eventOf = (space: string) => spaceEvent(tenant.org, space, { eventId: `evt_${space}_${tenant.org}` });
    // Each event until accepted, with its eventId (a 503 means "try again" while the engine is busy).
    const ingest = (space: string) => platform.ingest(eventOf(space), 30_000);
    // The hanging ones in one batch, sent again until each is accepted (a repeat answers its
    // first answer): their POSTs come within moments of each other, well inside the 9 s they
    // hang, where 210 requests of one event each spread over seconds on a loaded machine.
    const events = spaces.map(eventOf);
    await waitFor(async () => {
      const answer = await platform.admin('POST', '/v1/events/batch', { events });
      return answer.status === 202 && (answer.body as { results: { deliveries?: string[] }[] }).results.every((result) => result.deliveries) ? true : undefined;
    }, 30_000, 'the hanging installations\' events', 200);
    // At least 200 hanging batches are in flight (their POSTs arrived) when the other event comes.
    await waitFor(async () => (receiver.requests.length >= 200 ? true : undefined), 20_000, 'the hanging POSTs');
    const fast = await ingest('fast');
    const delivery = await platform.finalDelivery(fast.body.deliveries[0], tenant.token);
    assert.equal(delivery.status, 'delivered');
    // Over: answered, or given up by the platform at its 10 s attempt timeout (a loaded machine
    // can bring a hanging POST's 9 s answer later than that: the request is then retried).
    const endOf = (request: (typeof receiver.requests)[number]) => request.answeredAt ?? request.abandonedAt;
    await waitFor(async () => (receiver.requests.length >= HANGING + 1 && receiver.requests.every((request) => endOf(request) !== undefined) ? true : undefined), 20_000, 'every POST over');
    const isFast = (request: (typeof receiver.requests)[number]) => JSON.parse(request.body).spaceId === 'fast';
    const firstAnswered = Math.min(...receiver.requests.filter((request) => !isFast(request) && request.answeredAt !== undefined).map((request) => request.answeredAt!));
    // The other installation's POST waited for no hanging one's slot.
    assert.ok(receiver.requests.find(isFast)!.at < firstAnswered, "the other installation's POST came after a hanging one was answered");
    // Every hanging batch had its slot too: more POSTs were in flight at once than the old 200 slots.
    const inFlightAt = (at: number) => receiver.requests.filter((request) => request.at <= at && endOf(request)! > at).length;
    const most = Math.max(...receiver.requests.map((request) => inFlightAt(request.at)));
    assert.ok(most > 200, `at most ${most} POSTs were in flight at once`);
  });
});
