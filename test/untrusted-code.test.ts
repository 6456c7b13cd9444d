import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import { bundleScript } from '../src/cli/bundle';
import { parseEgressAllow } from '../src/config';
import { freePort } from '../src/temporal/dev-server';
import { childrenOf, isAlive } from '../src/system/procfs';
import { createAgents, postOnce } from '../src/activities/http-attempt';
import { webhookGuard } from '../src/net/guards';
import { runCli } from './support/cli';
import { ScriptedReceiver } from './support/receiver';
import { TestPlatform } from './support/platform';

/** Live workerd processes started by this test process (the API runs in it). */
function workerdChildren(): number[] {
  return childrenOf(process.pid).filter((pid) => isAlive(pid) && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'workerd');
}

const manifest = (name: string, org: string, blocks: string[] = []) =>
  [`name: ${name}`, 'title: Probe', 'description: Probes the sandbox.', `organization: ${org}`, 'visibility: private', 'scopes: []', 'script: src/index.js', ...(blocks.length ? ['blocks:', ...blocks.flatMap((id) => [`  - id: ${id}`, `    title: Block ${id}`])] : [])].join('\n');

const COUNTER = `import { createComponent, createIntegration } from 'integration-platform/runtime';
const counter = createComponent({ componentId: 'counter', render: async () => ({ type: 'block', children: [] }) });`;

/**
 * Hostile integrations, published by another organization than the victim's: none may
 * reach the host, the platform's ports or another tenant's data (issue: untrusted code).
 */
describe('untrusted integration code', function () {
  this.timeout(120_000);
  // Private webhook targets allowed: the platform's own ports must stay refused even so.
  const platform = new TestPlatform(__filename, { allowPrivateTargets: true });
  const work = mkdtempSync(path.join(os.tmpdir(), 'platform-hostile-'));
  let victim: { org: string; token: string };
  let attacker: { org: string; token: string };
  let victimSecret = '';
  let platformPorts: number[] = [];
  let apiPort = 0;
  let counter = 0;

  /** Bundles `source` as the CLI does; the bundle is what reaches the platform. */
  async function bundle(source: string): Promise<string> {
    const dir = path.join(work, `script-${++counter}`);
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'index.js'), source);
    return bundleScript(path.join(dir, 'index.js'));
  }

  async function publish(source: string, blocks: string[] = []) {
    const name = `probe-${Date.now().toString(36)}-${++counter}`;
    const started = Date.now();
    const answer = await platform.http('POST', '/v1/integrations', { token: attacker.token, body: { manifest: manifest(name, attacker.org, blocks), script: await bundle(source) } });
    return { ...answer, ms: Date.now() - started, text: JSON.stringify(answer.body) };
  }

  before(async function () {
    await platform.start();
    [victim, attacker] = await Promise.all([platform.tenant(), platform.tenant()]);
    const hook = await platform.webhook(victim.token, { org: victim.org, space: 'secret-space' }, 'https://8.8.8.8/hook', { space_content_updated: true });
    victimSecret = hook.secret;
    apiPort = Number(new URL(platform.api.url).port);
    platformPorts = platform.platformPorts.list();
  });
  after(() => platform.stop());

  it('finds the platform ports at run time: the API, the dev server gRPC port and its random loopback ports', function () {
    const temporalPort = Number(process.env.TEST_TEMPORAL_ADDRESS!.split(':').at(-1));
    assert.ok(platformPorts.includes(apiPort) && platformPorts.includes(temporalPort), JSON.stringify(platformPorts));
    // The dev server listens on several more random loopback ports (one an HTTP API).
    assert.ok(platformPorts.filter((port) => port !== apiPort && port !== temporalPort).length >= 3, JSON.stringify(platformPorts));
  });

  it('the escape from issue 6 reaches nothing: no host object, no eval, no fetch or socket to any platform port', async function () {
    const targets = platformPorts.map((port) => ({ port, path: port === apiPort ? '/codec/decode' : '/api/v1/namespaces' }));
    const source = `${COUNTER}
const found = {};
async function attempt(name, probe) {
  try { found[name] = String(await probe()).slice(0, 60); } catch { found[name] = 'refused'; }
}
await attempt('process', () => typeof process === 'undefined' ? 'refused: no process' : JSON.stringify(process.env));
await attempt('constructor chain', () => globalThis.constructor.constructor('return typeof process')());
await attempt('async constructor', () => (async () => {}).constructor('return 1')());
await attempt('require', () => typeof require === 'undefined' ? 'refused: no require' : require('node:child_process'));
await attempt('import node:fs', () => import('node:fs').then((fs) => fs.readFileSync('/etc/passwd', 'utf8')));
for (const { port, path } of ${JSON.stringify(targets)}) {
  await attempt('fetch ' + port, async () => {
    const answer = await fetch('http://127.0.0.1:' + port + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"payloads":[]}' });
    return answer.status + ' ' + (await answer.text());
  });
  await attempt('socket ' + port, async () => {
    const { connect } = await import('cloudflare:sockets');
    const socket = connect({ hostname: '127.0.0.1', port });
    await socket.opened;
    return 'opened';
  });
}
throw new Error('REPORT ' + JSON.stringify(found));
export default createIntegration({ components: [counter] });`;
    const answer = await publish(source);
    assert.equal(answer.status, 400, answer.text);
    const detail = answer.body.details.find((d: any) => d.field === 'script');
    const report = JSON.parse(/REPORT (\{.*\})/.exec(detail.message)![1]!) as Record<string, string>;
    assert.equal(Object.keys(report).length, 5 + 2 * platformPorts.length, 'every probe ran');
    for (const [probe, outcome] of Object.entries(report)) assert.match(outcome, /^refused/, `${probe}: ${outcome}`);
    assert.ok(!answer.text.includes(victimSecret), 'the victim’s signing secret never appears');
    assert.deepEqual(workerdChildren(), []);
  });

  it('code run inside the inspection request (a getter the inspector reads) opens no connection either', async function () {
    const connections: string[] = [];
    const listener = net.createServer((socket) => {
      connections.push('connected');
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as net.AddressInfo).port;
    const source = `${COUNTER}
const integration = createIntegration({ components: [counter] });
let opened = 0;
export default new Proxy(integration, {
  getOwnPropertyDescriptor(target, key) {
    if (key === 'componentIds') {
      for (const p of [${port}, ${apiPort}]) {
        fetch('http://127.0.0.1:' + p + '/codec/decode', { method: 'POST', body: '{}' }).then(() => opened++, () => undefined);
        import('cloudflare:sockets').then(({ connect }) => connect({ hostname: '127.0.0.1', port: p }).opened.then(() => opened++, () => undefined));
      }
    }
    return Reflect.getOwnPropertyDescriptor(target, key);
  },
});`;
    const answer = await publish(source, ['counter']);
    await new Promise((resolve) => setTimeout(resolve, 500));
    listener.close();
    assert.equal(answer.status, 201, answer.text);
    assert.deepEqual(connections, [], 'nothing connected to the listener on loopback');
  });

  it('refuses at start a PLATFORM_EGRESS_ALLOW entry that names a platform port', async function () {
    const port = await freePort();
    const temporalPort = process.env.TEST_TEMPORAL_ADDRESS!.split(':').at(-1);
    for (const entry of [`127.0.0.1:${port}`, `localhost:${temporalPort}`]) {
      const answer = await promisify(execFile)(process.execPath, [path.join(__dirname, '..', 'src', 'main.js'), 'api'], {
        env: { PATH: process.env.PATH, PORT: String(port), TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS, PLATFORM_ADMIN_TOKEN: 'x'.repeat(32), PLATFORM_ENCRYPTION_KEY: process.env.TEST_ENCRYPTION_KEY, PLATFORM_EGRESS_ALLOW: `10.0.0.1:443,${entry}` },
      }).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => err,
      );
      assert.equal(answer.code, 1, entry);
      assert.match(answer.stderr, new RegExp(`PLATFORM_EGRESS_ALLOW: ${entry} is a port of the platform itself`));
    }
    assert.throws(() => parseEgressAllow('127.0.0.1'), /"127.0.0.1" is not host:port/);
    assert.deepEqual(parseEgressAllow(' LocalHost:3000 ,[::1]:8443'), ['localhost:3000', '::1:8443']);
  });

  it('the same escape published through the CLI fails its local check and the platform learns nothing', async function () {
    const dir = path.join(work, 'cli-escape');
    mkdirSync(path.join(dir, 'src'), { recursive: true });
    writeFileSync(path.join(dir, 'platform-manifest.yaml'), manifest(`cli-escape-${Date.now().toString(36)}`, attacker.org));
    writeFileSync(
      path.join(dir, 'src', 'index.js'),
      `${COUNTER}
let leaked = 'nothing';
try { leaked = globalThis.constructor.constructor('return process')().env.PLATFORM_ENCRYPTION_KEY; } catch (error) { leaked = 'refused: ' + error.message; }
try { leaked += ' / ' + (await (await fetch('http://127.0.0.1:${apiPort}/codec/decode', { method: 'POST', body: '{"payloads":[]}' })).text()); } catch (error) { leaked += ' / refused: ' + error.message; }
throw new Error('LEAK ' + leaked);
export default createIntegration({ components: [counter] });`,
    );
    const answer = await runCli(['publish'], { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: attacker.token } });
    assert.equal(answer.code, 1, answer.stdout);
    assert.match(answer.stderr, /src\/index\.js: the script throws when loaded: LEAK refused: Code generation from strings disallowed for this context \/ refused: /);
    assert.doesNotMatch(answer.stderr, /payloads/);
  });

  describe('limits enforced from outside the isolate', function () {
    for (const [what, source, message] of [
      ['an endless loop', 'for (;;) {}', /did not finish loading within 2 s/],
      ['a microtask loop', '(function spin() { Promise.resolve().then(spin); })();', /did not finish loading within 2 s/],
      ['an allocation loop', 'const hoard = []; for (;;) hoard.push(new Array(1e5).fill(Math.random()));', /used more than 128 MiB while loading/],
    ] as const) {
      it(`${what}: a clear 400 within the limits, and no workerd process survives`, async function () {
        const answer = await publish(`${COUNTER}\n${source}\nexport default createIntegration({ components: [counter] });`);
        assert.equal(answer.status, 400, answer.text);
        assert.deepEqual(answer.body.details.map((d: any) => d.field), ['script']);
        assert.match(answer.body.details[0].message, message);
        // 2 s for the script, plus the isolate's cold start on a busy 2-core machine.
        assert.ok(answer.ms < 8000, `answered after ${answer.ms} ms`);
        assert.deepEqual(workerdChildren(), []);
      });
    }
  });

  describe('a report the bundle tries to forge', function () {
    const poisons: [string, string][] = [
      ['JSON.stringify', `JSON.stringify = () => '{"ok":true,"componentIds":["counter","forged"]}';`],
      ['Array.prototype and Array.isArray', `Array.isArray = () => false; Object.defineProperty(Array.prototype, '1', { get: () => 'forged', configurable: true }); Array.prototype.join = () => 'forged';`],
      ['Object.prototype getters', `for (const key of ['componentIds', 'ok', 'default', 'value']) Object.defineProperty(Object.prototype, key, { get: () => ['forged'], configurable: true });`],
      ['Response', `globalThis.Response = class { constructor() { return new Response('{"ok":true,"componentIds":["forged"]}'); } };`],
    ];
    for (const [poisoned, poison] of poisons) {
      it(`poisoned ${poisoned}: the report holds what the export registers, no more`, async function () {
        const source = `${COUNTER}\n${poison}\nexport default createIntegration({ components: [counter] });`;
        const forged = await publish(source, ['counter', 'forged']);
        assert.equal(forged.status, 400, forged.text);
        assert.deepEqual(forged.body.details.map((d: any) => [d.field, d.message]), [['blocks[1].id', 'the script registers no component "forged"; it registers: counter']]);
        assert.equal((await publish(source, ['counter'])).status, 201);
      });
    }

    it('a default export inheriting the brand from Object.prototype is no integration', async function () {
      const answer = await publish(`Object.defineProperty(Object.prototype, '__platformIntegration', { get: () => true }); Object.prototype.componentIds = ['forged'];\nexport default {};`);
      assert.deepEqual(answer.body.details, [{ field: 'script', message: 'the default export does not come from createIntegration()' }]);
    });

    it('a Proxy export: a throwing trap and an endless component list answer clear 400s', async function () {
      const throwing = await publish(`export default new Proxy({}, { getOwnPropertyDescriptor() { throw new Error('trap sprung'); } });`);
      assert.deepEqual(throwing.body.details, [{ field: 'script', message: 'the script throws when loaded: trap sprung' }]);
      const endless = await publish(`const ids = new Proxy([], { getOwnPropertyDescriptor: (t, key) => key === 'length' ? { value: 1e9, writable: true, configurable: false, enumerable: false } : Reflect.getOwnPropertyDescriptor(t, key) });
export default new Proxy({}, { getOwnPropertyDescriptor: (t, key) => ({ value: key === 'componentIds' ? ids : key === 'eventTypes' ? [] : true, writable: true, configurable: true, enumerable: true }) });`);
      assert.equal(endless.status, 400, endless.text);
      assert.match(endless.text, /the script registers more than 200 components|the script throws when loaded/);
    });
  });

  it('answers every problem at once: manifest errors with their lines and the script error', async function () {
    const name = `both-${Date.now().toString(36)}`;
    const broken = `${manifest(name, attacker.org).replace('visibility: private', 'visibility: secret')}\ncolour: red`;
    const answer = await platform.http('POST', '/v1/integrations', { token: attacker.token, body: { manifest: broken, script: await bundle('throw new Error("broken at load");') } });
    assert.equal(answer.status, 400);
    assert.deepEqual(
      answer.body.details.map((d: any) => [d.field, d.line, d.message]),
      [
        ['visibility', 5, 'must be one of: private, unlisted, public'],
        ['colour', 8, 'unknown key "colour"'],
        ['script', undefined, 'the script throws when loaded: broken at load'],
      ],
    );
  });

  it('a CommonJS bundle is refused with a clear "publish again" error', async function () {
    // Uploaded as the CLI bundled before ES modules, not bundled again here.
    const name = `cjs-${Date.now().toString(36)}`;
    const answer = await platform.http('POST', '/v1/integrations', { token: attacker.token, body: { manifest: manifest(name, attacker.org), script: 'module.exports = { default: {} };' } });
    assert.deepEqual(answer.body.details, [{ field: 'script', message: 'the script throws when loaded: module is not defined (integration bundles are ES modules: bundle and publish again with the current `platform` CLI)' }]);
  });

  describe('webhook installations pointed at a platform port, with PLATFORM_ALLOW_PRIVATE_TARGETS=true', function () {
    it('are refused for every platform port, by address and by name', async function () {
      for (const port of platformPorts) {
        for (const host of ['127.0.0.1', 'localhost', '[::1]', '0.0.0.0']) {
          const url = `http://${host}:${port}/codec/decode`;
          const answer = await platform.http('POST', '/v1/integrations/webhook/installations', { token: attacker.token, body: { target: { org: attacker.org, space: 's' }, configuration: { webhook_url: url, space_content_updated: true } } });
          assert.equal(answer.status, 400, url);
          assert.deepEqual(answer.body.details.map((d: any) => d.field), ['configuration.webhook_url'], url);
          assert.match(answer.body.message, /is a port of the platform itself/, url);
        }
      }
    });

    it('are refused on the host’s own non-loopback addresses too', async function () {
      const own = Object.values(os.networkInterfaces()).flat().find((entry) => entry && !entry.internal && entry.family === 'IPv4');
      if (!own) this.skip(); // A machine with loopback only has no other address to try.
      const answer = await platform.http('POST', '/v1/integrations/webhook/installations', { token: attacker.token, body: { target: { org: attacker.org, space: 's' }, configuration: { webhook_url: `http://${own.address}:${apiPort}/codec/decode`, space_content_updated: true } } });
      assert.equal(answer.status, 400);
      assert.match(answer.body.message, /is a port of the platform itself/);
    });

    it('are refused at connection time too: an attempt to a platform port sends nothing', async function () {
      const receiver = await new ScriptedReceiver().start();
      const port = Number(new URL(receiver.url).port);
      platform.platformPorts.add(port);
      const guard = webhookGuard(true, platform.platformPorts);
      const outcomes = await Promise.all(
        [receiver.url, receiver.url.replace('127.0.0.1', 'localhost')].map((url) => postOnce({ url, headers: {}, body: '{}' }, { guard, agents: createAgents() })),
      );
      await receiver.stop();
      assert.deepEqual(outcomes.map((outcome) => outcome.error), ['blocked_destination', 'blocked_destination']);
      assert.match(outcomes[1]!.errorMessage!, /localhost:\d+ is a port of the platform itself/);
      assert.equal(receiver.requests.length, 0);
    });

    it('a receiver on any other loopback port stays allowed', async function () {
      const hook = await platform.webhook(attacker.token, { org: attacker.org, space: 'fine' }, 'http://127.0.0.1:9/hook', { space_content_updated: true });
      assert.match(hook.id, /^ins_/);
    });
  });
});
