import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { install } from './support/examples';
import { PLATFORM_BIN, runCli } from './support/cli';
import { TestPlatform, waitFor } from './support/platform';

const VERSIONED = path.join(__dirname, '..', '..', 'test', 'fixtures', 'versioned');

/** `platform dev` on test/fixtures/versioned: each save runs on the chosen installations, and only there. */
describe('platform dev', function () {
  this.timeout(180_000);
  let platform: TestPlatform;
  let owner: { org: string; token: string };
  let stranger: { org: string; token: string };
  let dir: string;
  let name: string;
  let env: NodeJS.ProcessEnv;
  const script = () => path.join(dir, 'src', 'index.ts');
  const about = async (installation: any) => (await fetch(`${installation.urls.publicEndpoint}/about`)).json() as Promise<{ version: number; edited?: boolean }>;

  /** `platform dev` running, with what it printed so far. */
  function dev(args: string[]): { child: ChildProcess; out: () => string; err: () => string; exited: Promise<number | null> } {
    const child = spawn(process.execPath, [PLATFORM_BIN, 'dev', ...args], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    return { child, out: () => out, err: () => err, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
  }
  const said = (text: () => string, pattern: RegExp, what: string) => waitFor(async () => pattern.exec(text()) ?? undefined, 60_000, what);

  before(async function () {
    platform = await new TestPlatform(__filename).start();
    owner = await platform.tenant();
    stranger = await platform.tenant();
    name = `dev-${Math.random().toString(36).slice(2, 8)}`;
    dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'platform-dev-')), name);
    cpSync(VERSIONED, dir, { recursive: true });
    const manifest = path.join(dir, 'platform-manifest.yaml');
    // Public: another organization installs it too, and must never run its development versions.
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace(/^name: .*$/m, `name: ${name}`).replace(/^organization: .*$/m, `organization: ${owner.org}`).replace('visibility: private', 'visibility: public'));
    env = { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: owner.token };
    const published = await runCli(['publish'], { cwd: dir, env });
    assert.equal(published.code, 0, published.stderr);
  });
  after(async () => platform?.stop());

  it('runs each save on the chosen installation only, streams its log, keeps the last good version through a broken save, and returns it to the latest on Ctrl-C', async function () {
    const chosen = await install(platform, owner, name, { greeting: 'Hi' });
    const other = await install(platform, owner, name, { greeting: 'Hi' });
    const theirs = await install(platform, stranger, name, { greeting: 'Hi' });
    const running = dev(['--installation', chosen.id]);
    try {
      const first = Number((await said(running.err, /development version (\d+) runs on /, 'the first development version'))[1]);
      assert.equal((await about(chosen)).version, first);
      assert.equal((await about(other)).version, 1, 'an installation not chosen');
      assert.equal((await about(theirs)).version, 1);
      // Its log streams here: the move announced itself to the code.
      await said(running.out, new RegExp(`${chosen.id}  evt_\\S+  \\[versioned\\] setup on v${first}: active, was active`), 'its log').catch((err) => Promise.reject(new Error(`${err.message}; it printed: ${running.out()} ${running.err()}`)));

      writeFileSync(script(), readFileSync(script(), 'utf8').replace('return Response.json({ version,', 'return Response.json({ edited: true, version,'));
      const second = Number((await said(running.err, /development version (\d+) runs, \d+ ms after the change/, 'the reload'))[1]);
      assert.ok(second > first);
      assert.deepEqual(await about(chosen).then(({ version, edited }) => ({ version, edited })), { version: second, edited: true });

      writeFileSync(script(), `${readFileSync(script(), 'utf8')}\nexport const broken = ;\n`);
      await said(running.err, /not reloaded: /, 'the broken save refused');
      assert.equal((await about(chosen)).version, second, 'the last good version runs on');

      // Development versions are their owners' own: another organization cannot pin one, nor see the owner's installation.
      const pinned = await platform.http('POST', `/v1/installations/${theirs.id}/pin`, { token: stranger.token, body: { version: second } });
      assert.equal(pinned.status, 400, JSON.stringify(pinned.body));
      assert.equal((await platform.http('POST', `/v1/installations/${other.id}/pin`, { token: stranger.token, body: { version: second } })).status, 404);
    } finally {
      running.child.kill('SIGINT');
    }
    assert.equal(await running.exited, 0, running.err());
    assert.match(running.err(), new RegExp(`${chosen.id} back where they were`));
    assert.equal((await about(chosen)).version, 1);
    assert.equal((await platform.http('GET', `/v1/installations/${chosen.id}`, { token: owner.token })).body.pinned, undefined);
    writeFileSync(script(), readFileSync(script(), 'utf8').replace('\nexport const broken = ;\n', ''));
  });

  it('--all takes every installation of the owning organization, and none of another; on Ctrl-C a pinned one goes back to its pin', async function () {
    const { items: own } = (await platform.http('GET', `/v1/installations?integration=${name}`, { token: owner.token })).body;
    const keptOn = own[0];
    assert.equal((await platform.http('POST', `/v1/installations/${keptOn.id}/pin`, { token: owner.token, body: { version: 1 } })).status, 200);
    const running = dev(['--all']);
    try {
      await said(running.err, /development version \d+ runs on /, 'the development version');
      const { items } = (await platform.http('GET', `/v1/installations?integration=${name}`, { token: owner.token })).body;
      for (const installation of items) assert.equal((await platform.http('GET', `/v1/installations/${installation.id}`, { token: owner.token })).body.pinned, true);
      const theirs = (await platform.http('GET', `/v1/installations?integration=${name}`, { token: stranger.token })).body.items;
      assert.equal(theirs.length, 1);
      assert.equal((await platform.http('GET', `/v1/installations/${theirs[0].id}`, { token: stranger.token })).body.version, 1);
    } finally {
      running.child.kill('SIGINT');
    }
    assert.equal(await running.exited, 0, running.err());
    const after = (await platform.http('GET', `/v1/installations/${keptOn.id}`, { token: owner.token })).body;
    assert.deepEqual([after.version, after.pinned], [1, true], 'the member’s pin, as it was');
  });
});
