import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findOrBuildTemporalCli, TEMPORAL_CLI } from '../src/temporal/cli-binary';
import { toolCacheDir } from '../src/temporal/go-tools';
import { parseRetryAfter, retryDelayMs, verdict } from '../src/webhooks/schedule';

describe('retry schedule and outcome rules (pure)', function () {
  it('waits 1.0-1.1 s, 2.0-2.2 s, 4.0-4.4 s across the whole jitter range', function () {
    for (const [retry, low, high] of [[1, 1000, 1100], [2, 2000, 2200], [3, 4000, 4400]] as const) {
      assert.equal(retryDelayMs(retry, 0), low);
      assert.ok(retryDelayMs(retry, 0.999999) < high);
      for (let i = 0; i < 1000; i++) {
        const delay = retryDelayMs(retry, Math.random());
        assert.ok(delay >= low && delay < high, `${delay}`);
      }
    }
  });
  it('lets Retry-After lengthen a wait, never shorten it, capped at 60 s', function () {
    assert.equal(retryDelayMs(1, 0, 5000), 5000);
    assert.equal(retryDelayMs(3, 0, 1000), 4000);
    assert.equal(parseRetryAfter('120', 0), 60_000);
    assert.equal(parseRetryAfter('2', 0), 2000);
    assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 0), 10_000);
    assert.equal(parseRetryAfter('soon', 0), undefined);
    assert.equal(parseRetryAfter(undefined, 0), undefined);
  });
  it('retries 429, 5xx and network errors; fails every other non-2xx at once', function () {
    const cases: [number | undefined, string | undefined, string][] = [
      [200, undefined, 'delivered'], [204, undefined, 'delivered'], [299, undefined, 'delivered'],
      [429, undefined, 'retry'], [500, undefined, 'retry'], [503, undefined, 'retry'], [599, undefined, 'retry'],
      [100, undefined, 'failed'], [301, undefined, 'failed'], [304, undefined, 'failed'], [400, undefined, 'failed'], [401, undefined, 'failed'], [404, undefined, 'failed'], [410, undefined, 'failed'],
      [undefined, 'timeout', 'retry'], [undefined, 'connection_refused', 'retry'], [undefined, 'dns_failure', 'retry'], [undefined, 'tls_failure', 'retry'],
      [undefined, 'blocked_destination', 'failed'],
    ];
    for (const [statusCode, error, expected] of cases) assert.equal(verdict({ statusCode, error: error as never }), expected, `${statusCode ?? error}`);
  });
});

describe('Temporal CLI lookup', function () {
  const fake = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cli-'));
    const file = path.join(dir, 'temporal');
    writeFileSync(file, '#!/bin/sh\n');
    chmodSync(file, 0o755);
    return { dir, file };
  };
  it('takes TEMPORAL_CLI_PATH first, then PATH, then the per-user cache', async function () {
    const explicit = fake();
    const onPath = fake();
    const cacheHome = mkdtempSync(path.join(os.tmpdir(), 'cache-'));
    assert.equal(await findOrBuildTemporalCli({ TEMPORAL_CLI_PATH: explicit.file, PATH: onPath.dir }), explicit.file);
    assert.equal(await findOrBuildTemporalCli({ PATH: `/nonexistent:${onPath.dir}`, XDG_CACHE_HOME: cacheHome }), path.join(onPath.dir, 'temporal'));
    const cached = path.join(toolCacheDir({ XDG_CACHE_HOME: cacheHome }, TEMPORAL_CLI.cacheName), 'temporal');
    require('node:fs').mkdirSync(path.dirname(cached), { recursive: true });
    writeFileSync(cached, '#!/bin/sh\n');
    chmodSync(cached, 0o755);
    assert.equal(await findOrBuildTemporalCli({ PATH: '/nonexistent', XDG_CACHE_HOME: cacheHome }), cached);
    assert.match(cached, /integration-platform\/temporal-cli-v1\.5\.1\/temporal$/);
  });
  it('refuses a TEMPORAL_CLI_PATH that is not executable, and says how to get Go when it is missing', async function () {
    await assert.rejects(findOrBuildTemporalCli({ TEMPORAL_CLI_PATH: '/nonexistent/temporal' }), /not an executable/);
    await assert.rejects(findOrBuildTemporalCli({ PATH: '/nonexistent', XDG_CACHE_HOME: mkdtempSync(path.join(os.tmpdir(), 'empty-')) }), /Go is not installed.*go install github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1/s);
  });
});
