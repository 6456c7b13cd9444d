import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadOrCreateSecrets } from '../src/data-dir';
import { generateEncryptionKey } from '../src/temporal/codec';

describe('the data directory of the embedded default', function () {
  const fresh = () => mkdtempSync(path.join(os.tmpdir(), 'platform-data-'));

  it('keeps the key and token it generated across restarts, readable by its owner only', function () {
    const dir = fresh();
    const first = loadOrCreateSecrets(dir);
    assert.deepEqual(loadOrCreateSecrets(dir), first);
    assert.equal(statSync(path.join(dir, 'secrets.json')).mode & 0o777, 0o600);
    assert.throws(() => loadOrCreateSecrets(dir, generateEncryptionKey()), /PLATFORM_ENCRYPTION_KEY is not the key .* was first started with: it could read nothing there/);
  });

  it('takes a key given at the first start as its key, without writing it; another one, or none, later is refused', function () {
    const dir = fresh();
    const key = generateEncryptionKey();
    assert.equal(loadOrCreateSecrets(dir, key).encryptionKey, key);
    assert.ok(!readFileSync(path.join(dir, 'secrets.json'), 'utf8').includes(key), 'the given key is not on disk');
    assert.equal(loadOrCreateSecrets(dir, key).encryptionKey, key);
    assert.throws(() => loadOrCreateSecrets(dir, generateEncryptionKey()), /could read nothing there/);
    assert.throws(() => loadOrCreateSecrets(dir), /PLATFORM_ENCRYPTION_KEY is not set, and .* was first started with one/);
  });

  it('rotates: a new key given with the directory\'s in PLATFORM_DECRYPTION_KEYS becomes its key; the old one alone is refused after', function () {
    const dir = fresh();
    const old = generateEncryptionKey();
    const next = generateEncryptionKey();
    loadOrCreateSecrets(dir, old);
    assert.throws(() => loadOrCreateSecrets(dir, next), /could read nothing there/);
    assert.equal(loadOrCreateSecrets(dir, next, [old]).encryptionKey, next);
    assert.equal(loadOrCreateSecrets(dir, next).encryptionKey, next);
    assert.throws(() => loadOrCreateSecrets(dir, old), /could read nothing there/);
  });

  it('lets a directory from before the fingerprint take the key it is started with, then holds it to that key', function () {
    const dir = fresh();
    const key = generateEncryptionKey();
    writeFileSync(path.join(dir, 'secrets.json'), JSON.stringify({ adminToken: 'adm_old', encryptionKey: generateEncryptionKey() }));
    assert.deepEqual(loadOrCreateSecrets(dir, key), { adminToken: 'adm_old', encryptionKey: key });
    assert.throws(() => loadOrCreateSecrets(dir), /could read nothing there/);
  });

  it('creates missing parents, and refuses a place it cannot be at once, naming PLATFORM_DATA_DIR (Node\'s recursive mkdir spun for ever on /proc)', function () {
    const dir = path.join(fresh(), 'a', 'b');
    assert.equal(loadOrCreateSecrets(dir).adminToken.startsWith('adm_'), true);
    const file = path.join(fresh(), 'file');
    writeFileSync(file, '');
    for (const [place, why] of [['/proc/sys/nope', /cannot create \/proc\/sys\/nope \(ENOENT\)/], [path.join(file, 'below'), /ENOTDIR/], [file, /is not a directory/]] as const) {
      assert.throws(() => loadOrCreateSecrets(place), (err: Error) => err.message.startsWith('PLATFORM_DATA_DIR: ') && why.test(err.message), place);
    }
  });

  it('says which setting and file when secrets.json is damaged, or the directory cannot be written', function () {
    const damaged = fresh();
    writeFileSync(path.join(damaged, 'secrets.json'), '{adminToken');
    assert.throws(() => loadOrCreateSecrets(damaged), /^Error: PLATFORM_DATA_DIR: .*secrets\.json cannot be read \(Expected property name/);
    writeFileSync(path.join(damaged, 'secrets.json'), '{}');
    assert.throws(() => loadOrCreateSecrets(damaged), /^Error: PLATFORM_DATA_DIR: .*secrets\.json holds no adminToken/);
    // Root writes anywhere; /proc/sys is read-only to it too.
    assert.throws(() => loadOrCreateSecrets('/proc/sys'), /^Error: PLATFORM_DATA_DIR: \/proc\/sys is not writable/);
  });
});
