import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { configFromEnv } from '../src/config';
import { loadOrCreateSecrets } from '../src/data-dir';
import { openLogDatabase } from '../src/delivery-log/database';
import { listenOn } from '../src/net/listen';
import { freePort } from '../src/temporal/dev-server';
import { generateEncryptionKey } from '../src/encryption';

describe('configuration from the environment', function () {
  it('refuses a PLATFORM_DATABASE_URL that is neither postgres:// nor sqlite:, showing its scheme only', function () {
    for (const url of ['mysql://user:secret@db/x', 'postgress://user:secret@db/x', 'pg://x', 'delivery.db']) {
      assert.throws(() => configFromEnv({ PLATFORM_DATABASE_URL: url }), (err: Error) => /^PLATFORM_DATABASE_URL must be postgres:\/\//.test(err.message) && !err.message.includes('secret'), url);
    }
    for (const url of ['postgres://u@h/db', 'postgresql://u@h/db', 'Postgres://u@h/db', 'sqlite:/tmp/x.db']) assert.equal(configFromEnv({ PLATFORM_DATABASE_URL: url }).databaseUrl, url);
  });

  it('takes TCP ports by name, an empty one as unset, and refuses anything else naming the variable', function () {
    const ports = ({ port, devServerPort, devServerUiPort, baseUrl }: ReturnType<typeof configFromEnv>) => ({ port, devServerPort, devServerUiPort, baseUrl });
    assert.deepEqual(ports(configFromEnv({ PORT: '', PLATFORM_TEMPORAL_PORT: '', PLATFORM_TEMPORAL_UI_PORT: '' })), { port: 8080, devServerPort: 7233, devServerUiPort: 8233, baseUrl: 'http://localhost:8080' });
    assert.equal(configFromEnv({ PLATFORM_TEMPORAL_PORT: '17233' }).devServerPort, 17233);
    for (const [name, value] of [['PORT', 'abc'], ['PLATFORM_TEMPORAL_PORT', 'abc'], ['PLATFORM_TEMPORAL_UI_PORT', '70000'], ['PORT', '-1'], ['PORT', '0']] as const) {
      assert.throws(() => configFromEnv({ [name]: value }), new RegExp(`^Error: ${name} must be a TCP port \\(1-65535\\), got "${value}"`), `${name}=${value}`);
    }
    // The embedded default's listeners need a port each; with an external Temporal only PORT is listened on.
    assert.throws(() => configFromEnv({ PORT: '7233' }), /^Error: PORT and PLATFORM_TEMPORAL_PORT are both 7233: /);
    assert.throws(() => configFromEnv({ PLATFORM_TEMPORAL_UI_PORT: '8080' }), /^Error: PORT and PLATFORM_TEMPORAL_UI_PORT are both 8080: /);
    assert.equal(configFromEnv({ PORT: '7233', TEMPORAL_ADDRESS: 'temporal:7233' }).port, 7233);
  });

  it('takes the isolate cap as a positive whole number, 32 unless set', function () {
    assert.equal(configFromEnv({}).isolateMaxProcesses, 32);
    assert.equal(configFromEnv({ PLATFORM_ISOLATE_MAX_PROCESSES: '8' }).isolateMaxProcesses, 8);
    assert.equal(configFromEnv({}).maxConnectionsPerClient, 1024);
    assert.equal(configFromEnv({ PLATFORM_MAX_CONNECTIONS_PER_CLIENT: '2048' }).maxConnectionsPerClient, 2048);
    assert.throws(() => configFromEnv({ PLATFORM_MAX_CONNECTIONS_PER_CLIENT: '0' }), /^Error: PLATFORM_MAX_CONNECTIONS_PER_CLIENT must be a positive whole number/);
    for (const value of ['0', '-4', 'many', '2.5']) assert.throws(() => configFromEnv({ PLATFORM_ISOLATE_MAX_PROCESSES: value }), new RegExp(`^Error: PLATFORM_ISOLATE_MAX_PROCESSES must be a positive whole number, got "${value}"`), value);
  });

  it('takes a PLATFORM_ENCRYPTION_KEY of 32 bytes in base64 only: stray characters are refused, not skipped, and the key is never shown', function () {
    const key = generateEncryptionKey();
    assert.equal(configFromEnv({ PLATFORM_ENCRYPTION_KEY: key }).encryptionKey, key);
    // One key in any spelling is one key: what the data directory fingerprints is its canonical base64.
    assert.equal(configFromEnv({ PLATFORM_ENCRYPTION_KEY: key.replace(/=$/, '').replaceAll('+', '-').replaceAll('/', '_') }).encryptionKey, key, 'base64url without padding');
    assert.equal(configFromEnv({ PLATFORM_ENCRYPTION_KEY: key.replace(/=$/, '') }).encryptionKey, key, 'base64 without padding');
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'platform-key-'));
    loadOrCreateSecrets(dataDir, key);
    assert.equal(loadOrCreateSecrets(dataDir, configFromEnv({ PLATFORM_ENCRYPTION_KEY: key.replace(/=$/, '').replaceAll('+', '-').replaceAll('/', '_') }).encryptionKey).encryptionKey, key, 'the data directory takes it');
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    // The same 32 bytes with the last character's two spare bits set: not how any encoder writes them.
    const spareBits = key.slice(0, 42) + alphabet[alphabet.indexOf(key[42]!) + 1] + '=';
    // Node's decoder read each of these as 32 bytes: the first as some other key.
    assert.throws(() => configFromEnv({ PLATFORM_ENCRYPTION_KEY: spareBits }), /got 44 characters that no encoder writes for 32 bytes/);
    for (const bad of [`!!${key}`, `${key} `, `"${key}"`, key.slice(0, 40), `${key}AAAA`, spareBits]) {
      assert.throws(() => configFromEnv({ PLATFORM_ENCRYPTION_KEY: bad }), (err: Error) => err.message.startsWith('PLATFORM_ENCRYPTION_KEY must be 32 random bytes in base64') && !err.message.includes(key.slice(0, 8)), JSON.stringify(bad));
      // In the list, space around a key is a separator's, not the key's.
      if (bad.trim() === bad) assert.throws(() => configFromEnv({ PLATFORM_DECRYPTION_KEYS: `${generateEncryptionKey()}, ${bad}` }), (err: Error) => err.message.startsWith('PLATFORM_DECRYPTION_KEYS must be 32 random bytes in base64') && !err.message.includes(key.slice(0, 8)), JSON.stringify(bad));
    }
  });

  it('names the setting behind a port that is taken, and behind a database that cannot be reached (its password unsaid)', async function () {
    const holder = http.createServer();
    const port = await freePort();
    await listenOn(holder, port, '127.0.0.1', 'PORT');
    try {
      await assert.rejects(listenOn(http.createServer(), port, '127.0.0.1', 'PORT'), { message: `PORT: port ${port} on 127.0.0.1 is taken by another process; set it to a free port` });
    } finally {
      holder.close();
    }
    const closed = await freePort();
    await assert.rejects(openLogDatabase(`postgres://user:hunter2@127.0.0.1:${closed}/log`), (err: Error) => /cannot be reached: connect ECONNREFUSED .*\(PLATFORM_DATABASE_URL\)$/.test(err.message) && !err.message.includes('hunter2'));
  });
});
