import assert from 'node:assert/strict';
import { installationsAsOf } from '../src/activities/installations-as-of';
import type { InstallationProjection } from '../src/installations/types';
import { openStores, type PlatformStores } from '../src/platform/stores';
import { testDatabaseUrl } from './support/settings';

/** An attempt batch's installation reads, on the embedded log: each as of its attempt's time, only those due. */
describe("an attempt batch's reads of its installations", function () {
  let stores: PlatformStores;
  const installation = (id: string, revision = 1, status: 'active' | 'paused' = 'active'): InstallationProjection => ({
    id,
    integration: 'webhook',
    target: { org: 'org-as-of' },
    status,
    events: ['space_content_updated'],
    scopes: [],
    configuration: {},
    url: `https://${id}.example/hook`,
    createdAt: new Date(0).toISOString(),
    updatedAt: new Date().toISOString(),
    revision,
    signingSecrets: [],
  });

  before(async function () {
    stores = await openStores({ url: await testDatabaseUrl('sqlite', 'as_of'), encryptionKey: process.env.TEST_ENCRYPTION_KEY!, namespace: 'test', temporalUiUrl: 'http://ui.example' });
    for (const id of ['ins_a', 'ins_b', 'ins_c']) await stores.installations.save(installation(id));
  });
  after(() => stores?.close());

  it('reads those due in one turn together, serves a later-due attempt from a read started at or after its time, and reads again only what is due after it', async function () {
    const reads: string[][] = [];
    const installationAsOf = installationsAsOf({ getMany: (ids) => (reads.push([...ids].sort()), stores.installations.getMany(ids)) });
    const due = Date.now() - 10;
    const [a, b] = await Promise.all([installationAsOf('ins_a', due), installationAsOf('ins_b', due)]);
    assert.deepEqual([a?.status, b?.url], ['active', 'https://ins_b.example/hook']);
    assert.deepEqual(reads, [['ins_a', 'ins_b']], 'one read, of the two due: ins_c, whose attempt is not, is not read');
    // Due later than the first, yet no later than that read started: served by it.
    assert.equal(await installationAsOf('ins_a', due + 5), a);
    assert.equal(reads.length, 1);
    // A pause answered, then an attempt due after it: read again, alone, and the pause applies.
    await stores.installations.save(installation('ins_a', 2, 'paused'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const later = Date.now();
    const [paused, sameB] = await Promise.all([installationAsOf('ins_a', later), installationAsOf('ins_b', due)]);
    assert.equal(paused?.status, 'paused');
    assert.equal(sameB, b, 'ins_b due before its read: not read again');
    assert.deepEqual(reads, [['ins_a', 'ins_b'], ['ins_a']]);
    // Two due later, in one turn: one read of both; one never stored is answered as absent.
    const [again, absent] = await Promise.all([installationAsOf('ins_c', Date.now()), installationAsOf('ins_gone', Date.now())]);
    assert.deepEqual([again?.id, absent], ['ins_c', undefined]);
    assert.deepEqual(reads.at(-1), ['ins_c', 'ins_gone']);
    assert.equal(reads.length, 3);
  });

  it('starts a new read for an attempt due after a read already under way, and fails each waiting attempt when a read fails', async function () {
    const calls: { ids: string[]; settle: (result: Map<string, InstallationProjection> | Error) => void }[] = [];
    const installationAsOf = installationsAsOf({
      getMany: (ids) => new Promise((resolve, reject) => calls.push({ ids: [...ids], settle: (result) => (result instanceof Error ? reject(result) : resolve(result)) })),
    });
    const first = installationAsOf('ins_a', Date.now());
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(calls.length, 1, 'the read is under way');
    // Due now, after that read started: it may not serve it.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = installationAsOf('ins_a', Date.now());
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(calls.map((call) => call.ids), [['ins_a'], ['ins_a']]);
    calls[0]!.settle(new Map([['ins_a', installation('ins_a')]]));
    calls[1]!.settle(new Error('the log is unreachable'));
    assert.equal((await first)?.revision, 1);
    await assert.rejects(second, /unreachable/);
  });
});
