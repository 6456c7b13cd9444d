import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { LOG_LIMITS } from '../src/integration-logs/log-sink';
import { PENDING_LOG_LINES } from '../src/isolates/runtime-host';
import { install, publishExample } from './support/examples';
import { PLATFORM_BIN, runCli } from './support/cli';
import { TestPlatform, waitFor } from './support/platform';

const LOGBOOK = path.join(__dirname, '..', '..', 'test', 'fixtures', 'logbook');

/**
 * test/fixtures/logbook, written as for GitBook (Logger, JSX, console), published with the
 * CLI: what its code writes, from everywhere it runs, is kept for its owners.
 */
describe('integration logs: what integration code writes, for its authors', function () {
  this.timeout(120_000);
  let platform: TestPlatform;
  let owner: { org: string; token: string };
  let name: string;
  let installation: any;

  const logs = (query = '', token = owner.token) => platform.http('GET', `/v1/integrations/${name}/logs${query}`, { token });
  const call = (route: string) => fetch(`${installation.urls.publicEndpoint}/${route}`);
  /** The installation's lines once `ready` holds for them (lines arrive after the answer). */
  const linesOnce = (ready: (lines: any[]) => boolean, what: string, query = `?installation=${installation.id}&limit=1000`) =>
    waitFor(async () => {
      const { body } = await logs(query);
      return ready(body.items) ? (body.items as any[]) : undefined;
    }, 30_000, what);

  before(async function () {
    platform = await new TestPlatform(__filename).start();
    owner = await platform.tenant();
    name = await publishExample(platform, owner, LOGBOOK);
    installation = await install(platform, owner, name);
  });
  after(async () => platform?.stop());

  it('keeps each line with its time, level, installation, version and invocation: the script’s top level, an endpoint call, an event with its id, a render', async function () {
    assert.equal(await (await call('hello')).text(), 'hi');
    const rendered = await platform.http('POST', `/v1/installations/${installation.id}/components/note`, { token: owner.token, body: { props: {} } });
    assert.equal(rendered.status, 200, JSON.stringify(rendered.body));
    const lines = await linesOnce((items) => ['load', 'fetch', 'event', 'component'].every((kind) => items.some((line) => line.kind === kind)), 'a line of each kind');
    const of = (kind: string) => lines.filter((line) => line.kind === kind);
    assert.deepEqual(of('load').map((line) => [line.level, line.message]), [['info', 'script loaded']]);
    assert.deepEqual(of('fetch').map((line) => [line.level, line.message]).reverse(), [
      ['info', '[logbook] hello from the endpoint {"calls":1}'],
      ['debug', 'a detail'],
    ]);
    assert.deepEqual(of('component').map((line) => [line.level, line.message]), [['warn', 'rendering a note']]);
    const [setup] = of('event');
    assert.match(setup.message, /^\[logbook\] set up: /);
    const deliveries = await platform.http('GET', `/v1/deliveries?installation=${installation.id}`, { token: owner.token });
    assert.ok(deliveries.body.items.some((delivery: any) => delivery.eventId === setup.eventId && delivery.eventType === 'installation_setup'), 'the event line names the event it handled');
    for (const line of lines) {
      assert.equal(line.installationId, installation.id);
      assert.equal(line.organizationId, owner.org);
      assert.equal(line.integration, name);
      assert.equal(line.version, 1);
      assert.ok(Math.abs(Date.parse(line.time) - Date.now()) < 120_000, line.time);
    }
  });

  it('answers a 500 without its stack, and puts the stack in the log', async function () {
    const answer = await call('fail');
    assert.equal(answer.status, 500);
    const body = await answer.text();
    assert.equal(body, '{"error":"Internal server error"}');
    const lines = await linesOnce((items) => items.some((line) => line.message.includes('boom in fail')), 'the failure in the log');
    const failure = lines.find((line) => line.message.includes('boom in fail'))!;
    assert.equal(failure.level, 'error');
    assert.equal(failure.kind, 'fetch');
    assert.match(failure.message, /answered 500: Error: boom in fail\n\s+at /, 'with its stack');
    // Its frames name the integration's own source lines (the source map the CLI sent), not the bundle's.
    assert.match(failure.message, /\(src\/index\.tsx:30:15\)/, failure.message);
  });

  it('keeps what waitUntil work writes after the answer, and its failure', async function () {
    assert.equal(await (await call('later')).text(), 'answered');
    const lines = await linesOnce((items) => items.some((line) => line.message.includes('late failure')), 'the waitUntil failure');
    assert.ok(lines.some((line) => line.message === 'after the answer' && line.kind === 'fetch'));
    assert.match(lines.find((line) => line.message.includes('late failure'))!.message, /^waitUntil work failed: Error: late failure/);
  });

  it('reads by installation, level, time and pages; refuses a bad query naming the field', async function () {
    const errors = await logs(`?installation=${installation.id}&level=error`);
    assert.ok(errors.body.items.length >= 2 && errors.body.items.every((line: any) => line.level === 'error'), JSON.stringify(errors.body));
    const warnings = await logs(`?level=warn`);
    assert.deepEqual([...new Set(warnings.body.items.map((line: any) => line.level))].sort(), ['error', 'warn']);
    assert.deepEqual((await logs(`?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.items, []);
    const all = (await logs('?limit=1000')).body.items.map((line: any) => line.id);
    const paged: string[] = [];
    for (let token: string | undefined, pages = 0; pages === 0 || token; pages++) {
      const page = await logs(`?limit=3${token ? `&pageToken=${token}` : ''}`);
      assert.equal(page.status, 200, JSON.stringify(page.body));
      paged.push(...page.body.items.map((line: any) => line.id));
      token = page.body.nextPageToken;
    }
    assert.deepEqual(paged, all, 'pages of 3 give the whole log, newest first, once each');
    const bad = await logs('?level=loud&since=yesterday&limit=0');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.details.map((d: any) => d.field).sort(), ['level', 'limit', 'since']);
    // A token of one list is not a cursor of another.
    const { nextPageToken } = (await logs('?limit=1')).body;
    const elsewhere = await platform.http('GET', `/v1/deliveries?installation=${installation.id}&pageToken=${nextPageToken}`, { token: owner.token });
    assert.equal(elsewhere.status, 400, JSON.stringify(elsewhere.body));
    assert.deepEqual(elsewhere.body.details, [{ field: 'pageToken', message: 'is of another list' }]);
  });

  it('is read by the owning organization’s members and the administrator only: anyone else gets 404, as for an integration that does not exist', async function () {
    const stranger = await platform.tenant();
    const answer = await logs('', stranger.token);
    assert.equal(answer.status, 404);
    assert.deepEqual(answer.body, (await platform.http('GET', '/v1/integrations/no-such-integration/logs', { token: stranger.token })).body);
    assert.equal((await platform.admin('GET', `/v1/integrations/${name}/logs`)).status, 200);
  });

  it('bounds a logging loop: the isolate holds its lines up to a count, the installation a burst; what is dropped is counted in one line; other installations keep logging', async function () {
    const flooding = await install(platform, owner, name);
    const quiet = await install(platform, owner, name);
    // Its installation_setup line first: it takes a token of the burst, given back within 20 ms.
    await linesOnce((items) => items.some((line) => line.kind === 'event'), 'its setup line', `?installation=${flooding.id}`);
    const started = Date.now();
    const flood = await fetch(`${flooding.urls.publicEndpoint}/flood?n=20000`);
    assert.equal(await flood.text(), '20000 lines');
    const lines = await linesOnce((items) => items.some((line) => line.kind === 'platform'), 'the line saying what was dropped', `?installation=${flooding.id}&limit=1000`);
    const kept = lines.filter((line) => line.message.startsWith('flood line'));
    // A burst, and what the rate gave back while the isolate's two sends came in.
    const refilled = ((Date.now() - started) / 1000) * LOG_LIMITS.linesPerSecond;
    assert.ok(kept.length >= LOG_LIMITS.burstLines && kept.length <= LOG_LIMITS.burstLines + refilled, `${kept.length} flood lines kept`);
    const dropped = Number(/^(\d+) log lines dropped/.exec(lines.find((line) => line.kind === 'platform').message)![1]);
    assert.equal(kept.length + dropped, 20_000, 'every line is kept or counted');
    assert.ok(PENDING_LOG_LINES < 20_000);
    // Its neighbour's lines are its own to spend.
    assert.equal(await (await fetch(`${quiet.urls.publicEndpoint}/hello`)).text(), 'hi');
    await linesOnce((items) => items.some((line) => line.kind === 'fetch' && line.message.includes('hello from the endpoint')), 'the neighbour’s line', `?installation=${quiet.id}`);
  });

  it('holds code that reaches the logs binding itself (cloudflare:workers’ env) to its own installation, the bounds and its own kinds', async function () {
    const forging = await install(platform, owner, name);
    const answer = await fetch(`${forging.urls.publicEndpoint}/forge`);
    assert.equal(answer.status, 200);
    const { forged, huge, refused, burstMs } = (await answer.json()) as { forged: number; huge: number; refused: number; burstMs: number };
    assert.equal(forged, 204);
    assert.ok(huge === 413 || huge === 0 || huge === 429, `a body past the bound is cut off (${huge})`);
    // A burst of sends, and what the rate gave back while they went (a loaded machine makes them slow).
    const admitted = 5 * LOG_LIMITS.sendsPerSecond + Math.ceil(((burstMs + 1000) / 1000) * LOG_LIMITS.sendsPerSecond);
    assert.ok(refused >= 300 - admitted, `sends past the rate refused before their body is read: ${refused} of 300 in ${burstMs} ms`);
    const lines = await linesOnce((items) => items.some((line) => line.message === 'meant for another installation'), 'the forged line', `?installation=${forging.id}`);
    const line = lines.find((each) => each.message === 'meant for another installation');
    assert.equal(line.installationId, forging.id, 'filed under the installation whose isolate sent it');
    assert.equal(line.organizationId, owner.org);
    assert.equal(line.integration, name);
    assert.ok(!lines.some((each) => each.message === 'a forged platform line'), 'the platform’s kind is the platform’s only');
    assert.deepEqual((await platform.admin('GET', `/v1/integrations/${name}/logs?installation=ins_other`)).body.items, []);
    assert.equal(await (await fetch(`${forging.urls.publicEndpoint}/hello`)).text(), 'hi', 'and it answers on');
  });

  it('`platform logs` prints the newest lines oldest first; with --follow, each new line as it comes, until Ctrl-C', async function () {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: owner.token };
    const printed = await runCli(['logs', name, '--installation', installation.id, '--level', 'info'], { env });
    assert.equal(printed.code, 0, printed.stderr);
    const lines = printed.stdout.trim().split('\n');
    assert.match(lines.find((line) => line.includes('hello from the endpoint'))!, new RegExp(`^\\S+Z  INFO   fetch      ${installation.id}  \\[logbook\\] hello from the endpoint`));
    assert.ok(!printed.stdout.includes('a detail'), 'debug lines left out at --level info');
    assert.ok(lines.findIndex((line) => line.includes('script loaded')) < lines.findIndex((line) => line.includes('boom in fail')), 'oldest first');
    assert.match(printed.stdout, /answered 500: Error: boom in fail\n    {5}at /, 'a stack indented under its line');

    const follower = spawn(process.execPath, [PLATFORM_BIN, 'logs', name, '--installation', installation.id, '--follow', '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    follower.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => follower.once('exit', (code) => resolve(code)));
    try {
      await waitFor(async () => (out.includes('script loaded') ? true : undefined), 30_000, 'the lines before');
      const before = out.split('\n').filter(Boolean).length;
      assert.equal(await (await call('hello')).text(), 'hi');
      await waitFor(async () => (out.split('\n').filter(Boolean).length >= before + 2 ? true : undefined), 30_000, 'the new lines');
      const fresh = out.split('\n').filter(Boolean).slice(before).map((line) => JSON.parse(line));
      assert.deepEqual(fresh.map((line) => line.message), ['[logbook] hello from the endpoint {"calls":1}', 'a detail'], 'in the order written, each once');
    } finally {
      follower.kill('SIGINT');
    }
    assert.equal(await exited, 0);
  });

  it('keeps an installation’s newest lines up to its bound, and nothing past the retention', async function () {
    const store = platform.stores.integrationLogs;
    const source = { integration: name, version: 1, installationId: 'ins_trimmed', organizationId: owner.org };
    // Ten days old: past any retention, and older than every other line of this file.
    const old = Date.now() - 10 * 86_400_000;
    await store.append(Array.from({ length: 30 }, (_, i) => ({ ...source, time: old + i, level: 'info' as const, kind: 'fetch' as const, message: `line ${i}` })));
    assert.equal(await store.trim('ins_trimmed', 10), 20);
    const kept = await store.page({ integration: name, installation: 'ins_trimmed' }, 100);
    assert.deepEqual(kept.items.map((line) => line.message), Array.from({ length: 10 }, (_, i) => `line ${29 - i}`));
    assert.equal(await store.purge(old + 20), 0, 'the oldest went with the trim');
    assert.equal(await store.purge(old + 1000), 10);
    assert.deepEqual((await store.page({ integration: name, installation: 'ins_trimmed' }, 100)).items, []);
  });
});
