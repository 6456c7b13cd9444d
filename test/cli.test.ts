import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { deliveryDetail, table } from '../src/cli/format';
import { TestPlatform, spaceEvent, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';
import { PLATFORM_BIN, runCli } from './support/cli';
import { ApiClient, CliError } from '../src/cli/api-client';
import { sendEvents } from '../src/cli/events';

describe('the platform CLI', function () {
  describe('formatting', function () {
    it('aligns tables and says (none) for no rows', function () {
      const rows = [{ a: 'x', b: '1' }, { a: 'longer', b: '22' }];
      assert.equal(table(rows, [{ header: 'A', value: (r) => r.a }, { header: 'B', value: (r) => r.b }]), 'A       B\nx       1\nlonger  22');
      assert.equal(table([], [{ header: 'A', value: String }]), '(none)');
    });
    it('shows each attempt with its outcome and the wait that followed', function () {
      const text = deliveryDetail({
        id: 'evt_1:ins_1', status: 'failed', eventType: 'site_view', createdAt: 't0', url: 'https://r/',
        attempts: [{ attempt: 1, startedAt: 't1', durationMs: 12, statusCode: 500, responseBody: 'oops\nmore', nextDelayMs: 1042 }, { attempt: 2, startedAt: 't2', durationMs: 10000, error: 'timeout' }],
      });
      assert.match(text, /^Status {4}failed$/m);
      assert.match(text, /^1 +t1 +12 ms +HTTP 500 +1042 ms +oops more$/m);
      assert.match(text, /^2 +t2 +10000 ms +timeout +-$/m);
    });
  });

  it('says its version, as the package has it', async function () {
    const { version } = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const said = await runCli(['--version'], { env: process.env });
    assert.deepEqual([said.code, said.stdout], [0, `platform ${version}\n`]);
  });

  it('loads the bundler and the isolates’ runtime for the authoring commands only: an operator’s command loads a dozen modules', async function () {
    // What a run of `platform deliveries list` (refused: no API here) left in node's module cache.
    const probe = `process.argv = [process.argv[0], 'platform', 'deliveries', 'list', '--api', 'http://127.0.0.1:1'];
      require(${JSON.stringify(PLATFORM_BIN)});
      process.on('exit', () => process.stderr.write('\\nLOADED ' + JSON.stringify(Object.keys(require.cache))));`;
    const child = spawn(process.execPath, ['-e', probe], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise((resolve) => child.on('exit', resolve));
    const loaded: string[] = JSON.parse(stderr.slice(stderr.indexOf('LOADED ') + 7));
    assert.deepEqual(loaded.filter((file) => /node_modules\/(esbuild|miniflare|yaml|ajv)\//.test(file)), [], 'no authoring dependency');
    assert.ok(loaded.length < 30, `${loaded.length} modules: ${loaded.join(', ')}`);
  });

  it('a reader that stops reading (`| head`) is no failure: no EPIPE stack, exit 0', async function () {
    const child = spawn(process.execPath, [PLATFORM_BIN, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    assert.equal(await new Promise((resolve) => child.on('exit', resolve)), 0);
    assert.equal(stderr, '');
  });

  describe('events send, against a stand-in API', function () {
    const fileOf = (value: unknown) => {
      const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'cli-events-')), 'events.json');
      writeFileSync(file, JSON.stringify(value));
      return file;
    };
    /** An API answering each request from `answer`, recording what it was sent. */
    const standIn = (answer: (body: any, n: number) => unknown) => {
      const sent: any[] = [];
      const api = { request: async (_method: string, _path: string, body: any) => {
        sent.push(body);
        const answered = answer(body, sent.length);
        if (answered instanceof Error) throw answered;
        return answered;
      } } as unknown as ApiClient;
      return { api, sent };
    };
    const run = async (api: ApiClient, file: string) => {
      const waits: number[] = [];
      const printed: string[] = [];
      const error = await sendEvents(api, { json: true, print: (text) => printed.push(text) }, file, async (ms) => void waits.push(ms)).then(() => undefined, (err: Error) => err);
      return { waits, error, answer: JSON.parse(printed[0] ?? 'null') };
    };
    const accepted = (event: { eventId: string }) => ({ eventId: event.eventId, deliveries: [] });
    const unavailable = { error: 'unavailable', message: 'the event is not known to be accepted: retry it with the same eventId' };

    it('sends an event again after 503, 502 or no answer, with the eventId it gave it before the first try; not after a refusal of its own', async function () {
      const failures = [new CliError('503', undefined, 1, { status: 503 }), new CliError('no answer', undefined, 1, { status: 0 }), new CliError('502 Bad Gateway', undefined, 1, { status: 502 })];
      const { api, sent } = standIn((body) => failures.shift() ?? accepted(body));
      const { waits, error, answer } = await run(api, fileOf(spaceEvent('acme', 'sp')));
      assert.equal(error, undefined);
      assert.deepEqual(waits, [1000, 2000, 4000]);
      assert.equal(new Set(sent.map((body) => body.eventId)).size, 1);
      assert.match(answer.eventId, /^evt_/);
      assert.equal(answer.eventId, sent[0].eventId);
      const refusing = standIn(() => new CliError('404 organization acme not found', undefined, 1, { status: 404, error: 'not_found' }));
      const refused = await run(refusing.api, fileOf({ ...spaceEvent('acme', 'sp'), eventId: null }));
      assert.match(String(refused.error), /1 of 1 events were not accepted$/);
      assert.equal(refusing.sent.length, 1);
      assert.match(refusing.sent[0].eventId, /^evt_/, 'a null eventId is given one, as a missing one is');
      assert.deepEqual([refused.answer.eventId, refused.answer.error], [refusing.sent[0].eventId, 'not_found'], 'the refusal is shown, with the id');
    });

    it('sends again only the events of a batch not known to be accepted, with their ids; those still unknown at the end are listed with their eventIds', async function () {
      const { api, sent } = standIn((body, n) => ({ results: body.events.map((event: any, k: number) => (n === 1 && k === 1 ? unavailable : accepted(event))) }));
      const { waits, error, answer } = await run(api, fileOf([spaceEvent('acme', 'sp'), spaceEvent('acme', 'sp')]));
      assert.equal(error, undefined);
      assert.deepEqual(waits, [1000]);
      assert.deepEqual(sent[1].events, [sent[0].events[1]], 'the same event, its id unchanged');
      assert.deepEqual(answer.results.map((row: any) => row.eventId), sent[0].events.map((event: any) => event.eventId));

      const down = standIn(() => new CliError('503 unavailable', undefined, 1, { status: 503 }));
      const gaveUp = await run(down.api, fileOf({ events: [spaceEvent('acme', 'sp'), 'not an event'] }));
      assert.deepEqual(gaveUp.waits, [1000, 2000, 4000]);
      assert.equal(down.sent.length, 4);
      assert.match(String(gaveUp.error), /2 of 2 events were not accepted \(2 unavailable or not sent\)/);
      assert.deepEqual(gaveUp.answer.results.map((row: any) => [row.eventId, row.error]), [[down.sent[0].events[0].eventId, 'unavailable'], [undefined, 'unavailable']]);
    });

    it('Ctrl-C during a run: the request under way is answered, nothing more is sent, and every event is listed with its id', async function () {
      // A stand-in API over real HTTP, whose first batch answers only once the CLI was interrupted.
      const batches: any[] = [];
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const api = http.createServer((request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString()));
        request.on('end', async () => {
          const { events } = JSON.parse(body);
          batches.push(events);
          await released;
          response.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ results: events.map((event: any) => ({ eventId: event.eventId, deliveries: [] })) }));
        });
      });
      await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
      try {
        const file = fileOf(Array.from({ length: 700 }, () => spaceEvent('acme', 'sp')));
        const cli = spawn(process.execPath, [PLATFORM_BIN, 'events', 'send', file, '--json', '--api', `http://127.0.0.1:${(api.address() as AddressInfo).port}`, '--token', 'adm_x'], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        cli.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        await waitFor(async () => (batches.length === 1 ? true : undefined), 10_000, 'the first batch');
        cli.kill('SIGINT');
        // Time for the CLI to take the signal before the first batch is answered, on a loaded machine too.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        release();
        assert.equal(await new Promise((resolve) => cli.on('exit', resolve)), 1);
        assert.equal(batches.length, 1, 'nothing more was sent');
        const { results } = JSON.parse(out);
        assert.deepEqual(results.slice(0, 500).map((row: any) => row.eventId), batches[0].map((event: any) => event.eventId));
        assert.deepEqual([...new Set(results.slice(500).map((row: any) => row.error))], ['not_sent']);
        assert.ok(results.every((row: any) => /^evt_/.test(row.eventId)));
      } finally {
        api.close();
      }
    });

    it('refuses, before sending anything, input that is not an event: exit 2', async function () {
      const { api, sent } = standIn(() => ({}));
      for (const input of [42, null, 'event']) {
        const { error } = await run(api, fileOf(input));
        assert.ok(error instanceof CliError && error.exitCode === 2 && /holds .* not an event/.test(error.message), String(error));
      }
      assert.equal(sent.length, 0);
    });

    it('sends up to 500 events and 4 MiB a request', async function () {
      const { api, sent } = standIn((body) => ({ results: body.events.map(accepted) }));
      const { error, answer } = await run(api, fileOf(Array.from({ length: 501 }, () => spaceEvent('acme', 'sp'))));
      assert.equal(error, undefined);
      assert.deepEqual(sent.map((body) => body.events.length), [500, 1]);
      assert.equal(new Set(answer.results.map((row: any) => row.eventId)).size, 501);
      const big = standIn((body) => ({ results: body.events.map(accepted) }));
      await run(big.api, fileOf(Array.from({ length: 6 }, () => ({ ...spaceEvent('acme', 'sp'), note: 'x'.repeat(1024 * 1024) }))));
      assert.deepEqual(big.sent.map((body) => body.events.length), [3, 3]);
    });

    it('a batch refused whole stops the sending, and every event is still listed with its id: accepted, or not sent', async function () {
      const { api, sent } = standIn((body, n) => (n === 2 ? new CliError('413 request body too large', undefined, 1, { status: 413, error: 'payload_too_large' }) : { results: body.events.map(accepted) }));
      const { waits, error, answer } = await run(api, fileOf(Array.from({ length: 1200 }, () => spaceEvent('acme', 'sp'))));
      assert.deepEqual(waits, []);
      assert.equal(sent.length, 2, 'the third batch is not sent');
      assert.match(String(error), /700 of 1200 events were not accepted \(700 unavailable or not sent\); sending stopped: 413 request body too large/);
      assert.deepEqual(answer.results.map((row: any) => row.error ?? 'accepted').reduce((count: Record<string, number>, kind: string) => ({ ...count, [kind]: (count[kind] ?? 0) + 1 }), {}), { accepted: 500, not_sent: 700 });
      assert.ok(answer.results.every((row: any) => /^evt_/.test(row.eventId)), 'each with the id to send it again with');
      assert.deepEqual(answer.results.slice(0, 500).map((row: any) => row.eventId), sent[0].events.map((event: any) => event.eventId));
    });
  });

  describe('against the running API', function () {
    const platform = new TestPlatform(__filename);
    const receiver = new ScriptedReceiver((n) => ({ status: n < 2 ? 404 : 200 }));
    let env: NodeJS.ProcessEnv;
    let hook: { id: string };
    let failed: string[] = [];
    const cli = (...args: string[]) => runCli(args, { env });

    before(async function () {
      await Promise.all([platform.start(), receiver.start()]);
      const tenant = await platform.tenant();
      env = { ...process.env, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: tenant.token };
      hook = await platform.webhook(tenant.token, { org: tenant.org, space: 'sp' }, receiver.url, { space_content_updated: true });
      for (let i = 0; i < 2; i++) {
        const ingest = await platform.ingest(spaceEvent(tenant.org, 'sp'));
        failed.push((await platform.finalDelivery(ingest.body.deliveries[0], tenant.token)).id);
      }
      await waitFor(async () => ((await platform.http('GET', `/v1/deliveries?installation=${hook.id}&status=failed`, { token: tenant.token })).body.items.length === 2 ? true : undefined), 15_000, 'visibility');
    });
    after(async () => Promise.all([platform.stop(), receiver.stop()]));

    it('lists deliveries as a table and as JSON', async function () {
      const human = await cli('deliveries', 'list', '--installation', hook.id, '--status', 'failed');
      assert.equal(human.code, 0, human.stderr);
      assert.match(human.stdout, /^DELIVERY +STATUS +EVENT +CREATED$/m);
      for (const id of failed) assert.match(human.stdout, new RegExp(`^${id} +failed +space_content_updated +\\d{4}-`, 'm'));
      const json = JSON.parse((await cli('deliveries', 'list', '--installation', hook.id, '--json')).stdout);
      assert.deepEqual(json.items.map((d: any) => d.id).sort(), [...failed].sort());
      const before = JSON.parse((await cli('deliveries', 'list', '--installation', hook.id, '--until', new Date(Date.now() - 3_600_000).toISOString(), '--json')).stdout);
      assert.deepEqual(before.items, []);
      const ofType = (type: string) => cli('deliveries', 'list', '--event-type', type, '--json');
      assert.deepEqual(JSON.parse((await ofType('space_content_updated')).stdout).items.map((d: any) => d.id).sort(), [...failed].sort());
      assert.deepEqual(JSON.parse((await ofType('site_view')).stdout).items, []);
      const unknown = await ofType('space_updated');
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /^error: 400 invalid query: eventType must be one of space_content_updated, /);
    });

    it('shows one delivery with its attempts', async function () {
      const shown = await cli('deliveries', 'show', failed[0]!);
      assert.match(shown.stdout, /^Status {4}failed$/m);
      assert.match(shown.stdout, /^1 +\S+ +\d+ ms +HTTP 404 /m);
      assert.equal(JSON.parse((await cli('deliveries', 'show', failed[0]!, '--json')).stdout).attempts[0].statusCode, 404);
    });

    it('replays one, then the failed ones of an installation since a time', async function () {
      const one = await cli('deliveries', 'replay', failed[0]!, '--json');
      assert.equal(JSON.parse(one.stdout).id, `${failed[0]}:replay-1`);
      const bulk = await cli('deliveries', 'replay-failed', '--installation', hook.id, '--since', new Date(Date.now() - 600_000).toISOString());
      assert.equal(bulk.code, 0, bulk.stderr);
      // In the background: the count at once, progress on stderr, the end on stdout.
      assert.match(bulk.stderr, /^Replaying 2 failed deliveries \(one per event\) in operation op_\S+;/m);
      assert.match(bulk.stdout, /^Operation op_\S+ done: 2 replayed\.$/m);
      const replayed = [`${failed[0]}:replay-2`, `${failed[1]}:replay-1`];
      const finals = await Promise.all([JSON.parse(one.stdout).id, ...replayed].map((id: string) => platform.finalDelivery(id, env.PLATFORM_TOKEN!)));
      assert.deepEqual(finals.map((d) => d.status), ['delivered', 'delivered', 'delivered']);
    });

    it('creates an organization and its user, then sends events to it: given eventIds, delivered, and what was refused said per event', async function () {
      const admin = { env: { ...env, PLATFORM_TOKEN: platform.adminToken } };
      const org = `cli-${Date.now().toString(36)}`;
      const made = await runCli(['orgs', 'create', org, '--subdomain', org, '--title', 'CLI Org'], admin);
      assert.deepEqual([made.code, made.stdout], [0, `Created organization ${org} (${org})\n`]);
      const user = await runCli(['users', 'create', `${org}-ada`, '--org', org, '--json'], admin);
      assert.equal(user.code, 0, user.stderr);
      const { token, orgs } = JSON.parse(user.stdout);
      assert.deepEqual(orgs, [org]);
      const hook = await platform.webhook(token, { org, space: 'sp' }, receiver.url, { space_content_updated: true });
      assert.equal(hook.installation.status, 'active');

      const dir = mkdtempSync(path.join(os.tmpdir(), 'cli-events-'));
      const file = path.join(dir, 'events.json');
      writeFileSync(file, JSON.stringify([spaceEvent(org, 'sp'), { ...spaceEvent(org, 'sp'), revisionId: 7 }]));
      const sent = await runCli(['events', 'send', file, '--json'], admin);
      assert.equal(sent.code, 1);
      const [accepted, refused] = JSON.parse(sent.stdout).results;
      assert.match(accepted.eventId, /^evt_/, 'the CLI gave it its eventId');
      assert.deepEqual(accepted.deliveries, [`${accepted.eventId}:${hook.id}`]);
      assert.equal(refused.error, 'invalid_request');
      assert.match(sent.stderr, /^error: 1 of 2 events were not accepted\n/);
      await platform.finalDelivery(accepted.deliveries[0], token);

      writeFileSync(file, JSON.stringify({ ...spaceEvent(org, 'sp'), eventId: accepted.eventId }));
      const again = await runCli(['events', 'send', file], admin);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, new RegExp(`^0 +${accepted.eventId} +1 deliveries$`, 'm'), 'a repeat is answered, not delivered again');
      // From a pipe whose writer is slower than node (curl, say): read to its end.
      const piped = spawn(process.execPath, [PLATFORM_BIN, 'events', 'send', '--json'], { env: admin.env });
      let out = '';
      piped.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      setTimeout(() => piped.stdin.end(JSON.stringify(spaceEvent(org, 'sp'))), 500);
      assert.equal(await new Promise((resolve) => piped.on('exit', resolve)), 0);
      assert.deepEqual(JSON.parse(out).deliveries, [`${JSON.parse(out).eventId}:${hook.id}`]);
      writeFileSync(file, JSON.stringify([{ ...spaceEvent(org, 'sp'), eventId: `${org}-twice` }, { ...spaceEvent(org, 'sp'), eventId: `${org}-twice`, revisionId: 'other' }]));
      const twice = await runCli(['events', 'send', file], admin);
      assert.equal(twice.code, 0, twice.stderr);
      assert.equal(twice.stderr, `warning: events 0 and 1 share eventId ${org}-twice: the second is answered as the first, not delivered\n`);
      const bad = await runCli(['events', 'send', path.join(dir, 'missing.json')], admin);
      assert.deepEqual([bad.code, bad.stderr.split('\n')[0]], [2, `error: cannot read ${path.join(dir, 'missing.json')}: ENOENT`]);
      const users = await runCli(['users', 'create', 'nobody'], admin);
      assert.deepEqual([users.code, users.stderr.split('\n')[0]], [2, 'error: --org is required']);
    });

    it('explains errors and exits non-zero', async function () {
      const missing = await cli('deliveries', 'show', 'evt_nope:ins_nope');
      assert.equal(missing.code, 1);
      assert.equal(missing.stderr, 'error: 404 delivery not found\n');
      const unauthorized = await runCli(['deliveries', 'list'], { env: { ...env, PLATFORM_TOKEN: 'bad' } });
      assert.equal(unauthorized.code, 1);
      assert.match(unauthorized.stderr, /^error: 401 missing or invalid bearer token\nhint: check --token/);
      const usage = await cli('deliveries', 'replay-failed');
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /--installation is required/);
      const unknown = await cli('deliveries', 'list', '--bogus');
      assert.equal(unknown.code, 2);
      // Mistakes of this side are said at once (exit 2), not taken for an API that does not answer.
      const notUrl = await runCli(['deliveries', 'list', '--api', 'notaurl'], { env });
      assert.deepEqual([notUrl.code, notUrl.stderr.split('\n')[0]], [2, 'error: notaurl is not an http(s) URL']);
      const badToken = await runCli(['deliveries', 'list'], { env: { ...env, PLATFORM_TOKEN: 'adm_\u20ac' } });
      assert.deepEqual([badToken.code, badToken.stderr.split('\n')[0]], [2, 'error: the API token holds characters an HTTP header cannot carry']);
      const twoFiles = await cli('events', 'send', 'a.json', 'b.json');
      assert.equal(twoFiles.code, 2);
    });
  });
});
