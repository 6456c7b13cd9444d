import { inspect } from 'node:util';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Encryption, generateEncryptionKey, keyIdOf, UnknownKeyError } from '../src/encryption';
import { EncryptionCodec } from '../src/temporal/codec';
import { freePort } from '../src/temporal/dev-server';
import { ApiProcess } from './support/api-process';
import { TestPlatform, waitFor } from './support/platform';
import { DELIVERY_SHARDS, testSettings } from './support/settings';

describe('encryption keys: a process that lacks the namespace’s key, and a rotation while running', function () {
  const platform = new TestPlatform(__filename);
  /** The key the test platform runs with (the run's). */
  let oldKey = '';
  const newKey = generateEncryptionKey();
  let rotated: ApiProcess | undefined;
  before(async () => {
    oldKey = testSettings().encryptionKey;
    await platform.start();
  });
  after(async () => {
    await rotated?.stop();
    await platform.stop();
  });

  it('a key ring opens what an older key sealed, seals with the current one, and names a key it lacks', async function () {
    const old = new Encryption(oldKey);
    const ring = new Encryption(newKey, [oldKey]);
    assert.equal(ring.keyId, keyIdOf(newKey));
    assert.deepEqual(ring.keyIds, [keyIdOf(newKey), keyIdOf(oldKey)]);
    assert.equal(ring.open(old.seal('sealed before the rotation')), 'sealed before the rotation');
    assert.throws(() => old.open(ring.seal('sealed after')), (err: Error) => err instanceof UnknownKeyError && err.message.includes(keyIdOf(oldKey)));
    const payload = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"x"') };
    const [sealedOld] = await new EncryptionCodec(oldKey).encode([payload]);
    assert.deepEqual(Buffer.from((await new EncryptionCodec(newKey, [oldKey]).decode([sealedOld!]))[0]!.data!).toString(), '"x"');
    const lacking = new EncryptionCodec(newKey);
    await assert.rejects(lacking.decode([sealedOld!]), new RegExp(`sealed with key ${keyIdOf(oldKey)}, which this process lacks`));
    assert.deepEqual([...lacking.unknownKeys], [keyIdOf(oldKey)]);
    // The worker logs its options, the codec among them, at debug: no key is written out.
    const written = `${JSON.stringify(new EncryptionCodec(newKey, [oldKey]))} ${inspect(new EncryptionCodec(newKey, [oldKey]), { depth: 5 })}`;
    for (const key of [newKey, oldKey]) assert.ok(!written.includes(key) && !written.includes(Buffer.from(key, 'base64').toString('hex')), written);
  });

  it('refuses to start a process whose keys cannot open the namespace’s workflows, naming both key ids', async function () {
    await platform.tenant();
    const port = await freePort();
    const answer = await promisify(execFile)(process.execPath, [path.join(__dirname, '..', 'src', 'main.js'), 'api'], {
      env: {
        PATH: process.env.PATH,
        PORT: String(port),
        TEMPORAL_ADDRESS: testSettings().address,
        TEMPORAL_NAMESPACE: platform.namespace,
        PLATFORM_TASK_QUEUE: platform.taskQueue,
        PLATFORM_DELIVERY_SHARDS: String(DELIVERY_SHARDS),
        PLATFORM_ADMIN_TOKEN: platform.adminToken,
        PLATFORM_ENCRYPTION_KEY: newKey,
        PLATFORM_DATABASE_URL: platform.databaseUrl,
        LOG_LEVEL: 'silent',
      },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(answer.code, 1);
    assert.match(answer.stderr, new RegExp(`sealed with key ${keyIdOf(oldKey)}, which this process lacks \\(it has ${keyIdOf(newKey)}\\)`));
  });

  it('a process given the new key and the old one serves what the old one sealed; one lacking the new key says so at /readyz once such payloads reach it', async function () {
    const member = await platform.tenant();
    const hook = await platform.webhook(member.token, { org: member.org, space: 's' }, 'https://example.com/hook', { space_content_updated: true });
    rotated = await new ApiProcess(platform, { PLATFORM_ENCRYPTION_KEY: newKey, PLATFORM_DECRYPTION_KEYS: oldKey }).start();
    // The signing secret was sealed in the log by the old key's process.
    const secret = await rotated.http('GET', `/v1/installations/${hook.id}/signing-secret`, { token: member.token });
    assert.equal(secret.status, 200, JSON.stringify(secret.body));
    assert.equal(secret.body.secret, hook.secret);
    assert.equal((await rotated.http('GET', `/v1/installations/${hook.id}`, { token: member.token })).body.status, 'active');
    // A change through the rotated process is sealed with the new key: this platform's worker, which lacks it, cannot run it.
    // The codec endpoint's callers choose the key ids they send: what it cannot open makes nothing unready.
    const [foreign] = await new EncryptionCodec(newKey).encode([{ metadata: {}, data: Buffer.from('"x"') }]);
    const sent = { metadata: Object.fromEntries(Object.entries(foreign!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')])), data: Buffer.from(foreign!.data!).toString('base64') };
    assert.equal((await platform.http('POST', '/codec/decode', { body: { payloads: [sent] } })).status, 400);
    assert.deepEqual((await platform.http('GET', '/readyz')).body.checks, { temporal: 'ok', database: 'ok', keys: 'ok' });
    void rotated.http('PATCH', `/v1/installations/${hook.id}/configuration`, { token: member.token, body: { page_feedback: null } });
    const ready = await waitFor(async () => {
      const answer = await platform.http('GET', '/readyz');
      return answer.status === 503 ? answer : undefined;
    }, 60_000, 'the old process’s readiness to fail');
    assert.equal(ready.body.message, 'keys is not ready');
    assert.deepEqual(ready.body.details, [{ field: 'keys', message: `payloads sealed with key ${keyIdOf(newKey)} reach this process, which lacks it (PLATFORM_ENCRYPTION_KEY, PLATFORM_DECRYPTION_KEYS)` }]);
  });
});
