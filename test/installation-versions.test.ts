import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rolloutWorkflowId } from '../src/workflows/rollout';
import { install } from './support/examples';
import { runCli } from './support/cli';
import { TestPlatform, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

const VERSIONED = path.join(__dirname, '..', '..', 'test', 'fixtures', 'versioned');

/**
 * test/fixtures/versioned, published with the CLI and published again: installations move
 * to the new version as at GitBook, keeping what they had, but the pinned ones.
 */
describe('versions roll out to installations, but the pinned ones', function () {
  this.timeout(180_000);
  let released!: () => void;
  const held = new ScriptedReceiver(() => ({ status: 200, until: new Promise((resolve) => (released = () => resolve(undefined))) }));
  let platform: TestPlatform;
  let owner: { org: string; token: string };
  let dir: string;
  let name: string;

  const as = (token: string) => ({ token });
  const about = async (installation: any) => (await fetch(`${installation.urls.publicEndpoint}/about`)).json() as Promise<{ version: number; configuration: Record<string, unknown> }>;
  const read = async (id: string) => (await platform.http('GET', `/v1/installations/${id}`, as(owner.token))).body;
  const publish = async () => {
    const published = await runCli(['publish'], { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: owner.token } });
    assert.equal(published.code, 0, published.stderr);
    return Number(/version (\d+)/.exec(published.stdout)![1]);
  };
  const setupLines = async (id: string, count: number) =>
    waitFor(async () => {
      const lines = (await platform.http('GET', `/v1/integrations/${name}/logs?installation=${id}`, as(owner.token))).body.items.filter((line: any) => line.message.includes('setup on'));
      return lines.length >= count ? lines.map((line: any) => line.message.replace('[versioned] ', '')).reverse() : undefined;
    }, 30_000, `${count} setup lines of ${id}`);

  before(async function () {
    await held.start();
    platform = await new TestPlatform(__filename, { egressAllow: [`127.0.0.1:${new URL(held.url).port}`] }).start();
    owner = await platform.tenant();
    name = `versioned-${Math.random().toString(36).slice(2, 8)}`;
    dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'platform-versioned-')), name);
    cpSync(VERSIONED, dir, { recursive: true });
    const manifest = path.join(dir, 'platform-manifest.yaml');
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace(/^name: .*$/m, `name: ${name}`).replace(/^organization: .*$/m, `organization: ${owner.org}`));
    assert.equal(await publish(), 1);
  });
  after(async () => Promise.all([platform?.stop(), held.stop()]));

  it('moves each installation that is not pinned to a new version: configuration and OAuth credentials kept, new defaults applied, installation_setup fired with what was before; a pinned one stays', async function () {
    const moving = await install(platform, owner, name, { greeting: 'Hi' });
    const pinned = await install(platform, owner, name, { greeting: 'Hello' });
    assert.deepEqual(await (await fetch(`${moving.urls.publicEndpoint}/connect`)).json(), { stored: true });
    const pin = await platform.http('POST', `/v1/installations/${pinned.id}/pin`, { token: owner.token, body: { version: 1 } });
    assert.equal(pin.status, 200, JSON.stringify(pin.body));
    assert.equal(pin.body.pinned, true);

    // Version 2: a new property with a default, and a call in flight on version 1 meanwhile.
    const manifest = path.join(dir, 'platform-manifest.yaml');
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace('      greeting: { type: string, title: Greeting }', '      greeting: { type: string, title: Greeting }\n      mode: { type: string, enum: [fast, safe], default: fast }'));
    const inFlight = fetch(`${moving.urls.publicEndpoint}/hold?until=${encodeURIComponent(held.url)}`).then((answer) => answer.json());
    await waitFor(async () => (held.requests.length === 1 ? true : undefined), 30_000, 'the call on version 1 to be under way');
    assert.equal(await publish(), 2);
    assert.equal(await platform.client.workflow.getHandle(rolloutWorkflowId(name, 2)).result(), 1, 'one installation moved');
    // Held no longer than the rollout: past 10 s the platform stops the call (a busy CI run's publish and rollout came near).
    released();

    const moved = await read(moving.id);
    assert.equal(moved.version, 2);
    assert.equal(moved.status, 'active');
    assert.deepEqual(moved.configuration, { greeting: 'Hi', oauth_credentials: { access_token: '********' }, mode: 'fast' }, 'credentials masked in the API');
    const seen = await about(moving);
    assert.equal(seen.version, 2, 'its next call runs version 2');
    assert.deepEqual(seen.configuration.oauth_credentials, { access_token: 'token-1' }, 'the credentials its OAuth flow stored');
    assert.deepEqual(await inFlight, { version: 1 }, 'the call under way finished on the version it started with');
    assert.deepEqual(await setupLines(moving.id, 2), ['setup on v1: active, was pending', 'setup on v2: active, was active']);

    const stayed = await read(pinned.id);
    assert.equal(stayed.version, 1);
    assert.equal(stayed.pinned, true);
    assert.deepEqual(stayed.configuration, { greeting: 'Hello' });
    assert.equal((await about(pinned)).version, 1);
  });

  it('gives code GitBook’s installation methods on its own installation, and refuses the rest naming the method, in its log too', async function () {
    const installation = await install(platform, owner, name, { greeting: 'Hi' });
    const answer = await fetch(`${installation.urls.publicEndpoint}/gitbook-api`);
    assert.equal(answer.status, 200);
    const body = (await answer.json()) as Record<string, string>;
    assert.equal(body.greeting, 'Set by code');
    assert.equal((await read(installation.id)).configuration.greeting, 'Set by code');
    assert.equal(body.other, 'installation not found');
    assert.match(body.content, /^context\.api\.spaces\.getRevisionById\(\): GitBook's API is not this platform's/);
    assert.equal(body.thenable, 'undefined', 'context.api is no thenable');
    await waitFor(async () => {
      const lines = (await platform.http('GET', `/v1/integrations/${name}/logs?installation=${installation.id}&level=warn`, as(owner.token))).body.items;
      return lines.some((line: any) => line.message.startsWith('context.api.spaces.getRevisionById():')) ? true : undefined;
    }, 30_000, 'the refusal in its log, though the code caught it');
  });

  it('pins to an earlier version and unpins back to the latest, each move announced; refuses a version never published, naming the field', async function () {
    const installation = await install(platform, owner, name, { greeting: 'Yo' });
    assert.equal((await read(installation.id)).version, 2);
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: owner.token };
    const down = await runCli(['pin', installation.id, '1'], { env });
    assert.equal(down.code, 0, down.stderr);
    assert.equal(down.stdout, `${installation.id}: version 1, pinned: active\n`);
    assert.equal((await about(installation)).version, 1);
    const up = await runCli(['unpin', installation.id], { env });
    assert.equal(up.code, 0, up.stderr);
    assert.equal(up.stdout, `${installation.id}: version 2, moved by publishes: active\n`);
    assert.equal((await read(installation.id)).pinned, undefined);
    assert.equal((await about(installation)).version, 2);
    assert.deepEqual(await setupLines(installation.id, 3), ['setup on v2: active, was pending', 'setup on v1: active, was active', 'setup on v2: active, was active']);

    const never = await platform.http('POST', `/v1/installations/${installation.id}/pin`, { token: owner.token, body: { version: 9 } });
    assert.equal(never.status, 400);
    assert.deepEqual(never.body.details.map((detail: any) => detail.field), ['version']);
    const stranger = await platform.tenant();
    assert.equal((await platform.http('POST', `/v1/installations/${installation.id}/pin`, { token: stranger.token, body: { version: 1 } })).status, 404);
    const hook = await platform.http('POST', '/v1/integrations/webhook/installations', { token: owner.token, body: { target: { org: owner.org }, configuration: { webhook_url: 'https://example.com/hook' } } });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    assert.equal((await platform.http('POST', `/v1/installations/${hook.body.id}/pin`, { token: owner.token, body: { version: 1 } })).status, 400);
  });
});
