import assert from 'node:assert/strict';
import { EncryptionCodec } from '../src/temporal/codec';
import { backlogQuery } from '../src/workflows/shard-contract';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { idsOfOneShard, WHOLE_RUN_EPOCH_MS, wholeRunShardWorkflowId } from './support/settings';

/**
 * Prompt receivers' first attempts share batches (issue 28's isolation): through the real
 * pipeline, the attempt batch says how long each attempt took after its time, and the
 * shard batches together the first attempts of the installations it saw answer promptly;
 * one whose receiver lags keeps a lane of its own.
 */
describe('first attempts of prompt receivers, through the pipeline', function () {
  const platform = new TestPlatform(__filename, { shardLimits: { epochMs: WHOLE_RUN_EPOCH_MS } });
  const receiver = new ScriptedReceiver((_n, request) => (JSON.parse(request.body).spaceId === 'lagging' ? { status: 200, delayMs: 1500 } : { status: 200 }));
  before(async () => Promise.all([platform.start(), receiver.start()]));
  after(async () => Promise.all([platform.stop(), receiver.stop()]));

  it("puts several prompt installations' deliveries in one attempt batch, and a lagging one's in none of theirs", async function () {
    const tenant = await platform.tenant();
    const spaces = ['p0', 'p1', 'p2', 'p3', 'p4', 'lagging'];
    const installationOf = new Map<string, string>();
    for (const space of spaces) installationOf.set(space, (await platform.webhook(tenant.token, { org: tenant.org, space }, receiver.url, { space_content_updated: true })).id);
    const spaceOf = new Map([...installationOf].map(([space, installation]) => [installation, space]));
    // Every event to one shard, whose run outlasts the test: one history holds every batch.
    const ids = idsOfOneShard(`prompt_${tenant.org}`, spaces.length * 2);
    const shard = platform.client.workflow.getHandle(wholeRunShardWorkflowId(ids[0]!));
    const round = async (k: number) => {
      const answer = await platform.admin('POST', '/v1/events/batch', { events: spaces.map((space, i) => spaceEvent(tenant.org, space, { eventId: ids[k * spaces.length + i] })) });
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      await waitFor(async () => (receiver.requests.length === (k + 1) * spaces.length ? true : undefined), 30_000, `round ${k}'s POSTs`);
      // Their answers taken by the shard (not only recorded): what it learnt of each receiver applies to the next round.
      await waitFor(async () => ((await shard.query(backlogQuery)) === 0 ? true : undefined), 30_000, `round ${k} settled in the shard`);
    };
    // Unknown to the run, each has a batch of its own; then the prompt ones share.
    await round(0);
    await round(1);

    const codec = new EncryptionCodec(process.env.TEST_ENCRYPTION_KEY!);
    const decoded = async (payloads: unknown) => JSON.parse(Buffer.from((await codec.decode(payloads as never))[0]!.data!).toString());
    const batches: string[][] = [];
    const tookMs = new Map<string, number | undefined>();
    for (const event of (await shard.fetchHistory()).events ?? []) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === 'attemptDeliveries') batches.push([...new Set(((await decoded(scheduled.input!.payloads)) as { entries: { id: string }[] }).entries.map((entry) => spaceOf.get(entry.id.split(':')[1]!)!))].sort());
      const completed = event.activityTaskCompletedEventAttributes;
      if (completed?.result) for (const result of (await decoded(completed.result.payloads)) as { id: string; tookMs?: number }[]) tookMs.set(result.id, result.tookMs);
    }
    const [first, second] = [batches.slice(0, spaces.length), batches.slice(spaces.length)];
    assert.deepEqual(first.map((batch) => batch.join()).sort(), [...spaces].sort(), 'the first round: a batch each');
    // Prompt: answered within 500 ms of its time in the first round (the lagging one takes 1.5 s; on a stalled machine a prompt one may not make it).
    const prompt = spaces.filter((space, i) => (tookMs.get(`${ids[i]}:${installationOf.get(space)}`) ?? Infinity) <= 500);
    assert.ok(prompt.length >= 2 && !prompt.includes('lagging'), `prompt in the first round: ${prompt.join()}`);
    const apart = spaces.filter((space) => !prompt.includes(space));
    assert.deepEqual(second.map((batch) => batch.join()).sort(), [prompt.join(), ...apart].sort(), 'the second: the prompt ones in one batch, each other alone');
  });
});
