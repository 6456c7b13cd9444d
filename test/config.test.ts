import assert from 'node:assert/strict';
import { configFromEnv } from '../src/config';

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
    for (const [name, value] of [['PORT', 'abc'], ['PLATFORM_TEMPORAL_PORT', 'abc'], ['PLATFORM_TEMPORAL_UI_PORT', '70000'], ['PORT', '-1']] as const) {
      assert.throws(() => configFromEnv({ [name]: value }), new RegExp(`^Error: ${name} must be a TCP port \\(0-65535\\), got "${value}"`), `${name}=${value}`);
    }
  });
});
