import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateEncryptionKey } from '../src/encryption';
import { childrenOf, isAlive, processTrees } from '../src/system/procfs';
import { freePort, startDevServer, type DevServer } from '../src/temporal/dev-server';
import { waitFor } from './support/platform';
import { answer, comm, DIST, embedded, healthy } from './support/embedded';
import { ScriptedReceiver } from './support/receiver';
import { testDatabaseUrl } from './support/settings';

describe('failing fast and honestly when Temporal is away', function () {
  this.timeout(180_000);
  let server: DevServer;
  let api: ChildProcess;
  let worker: ChildProcess;
  let base = '';
  const dbFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'platform-away-')), 'temporal.db');
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  const receiver = new ScriptedReceiver();
  /** An organization the API has seen, with a webhook to the receiver: its events go as far as the hand-over. */
  const org = `org-${randomBytes(3).toString('hex')}`;
  let port = 0;
  /** Its member's token and webhook installation. */
  let member = '';
  let hookId = '';

  before(async function () {
    port = await freePort();
    server = await startDevServer({ cliPath: process.env.TEMPORAL_CLI_RESOLVED!, namespace: 'default', dbFile, port });
    const apiPort = await freePort();
    base = `http://127.0.0.1:${apiPort}`;
    const env = { PATH: process.env.PATH, TEMPORAL_ADDRESS: server.address, PORT: String(apiPort), PLATFORM_BASE_URL: base, PLATFORM_ADMIN_TOKEN: adminToken, PLATFORM_ENCRYPTION_KEY: generateEncryptionKey(), PLATFORM_DATABASE_URL: await testDatabaseUrl('sqlite', 'away'), PLATFORM_ALLOW_PRIVATE_TARGETS: 'true', PLATFORM_WORKER_METRICS_PORT: String(await freePort()), LOG_LEVEL: 'silent' };
    api = spawn(process.execPath, [path.join(DIST, 'src', 'main.js'), 'api'], { env, stdio: 'ignore' });
    worker = spawn(process.execPath, [path.join(DIST, 'src', 'main.js'), 'worker'], { env, stdio: 'ignore' });
    await Promise.all([healthy(base), receiver.start()]);
    // A fresh worker's first tasks can outlast the API's deadline under the suite's load: a 503 is tried again (409: an earlier try landed).
    await waitFor(async () => ([201, 409].includes((await answer(base, 'POST', '/v1/orgs', adminToken, { id: org, subdomain: org, title: 'Away' })).status) ? true : undefined), 60_000, 'the organization', 500);
    const { body: user } = await answer(base, 'POST', '/v1/users', adminToken, { id: `${org}-u`, orgs: [org] });
    const hook = await answer(base, 'POST', '/v1/integrations/webhook/installations', user.token, { target: { org, space: 's' }, configuration: { webhook_url: receiver.url, space_content_updated: true } });
    assert.equal(hook.body.status, 'active', JSON.stringify(hook.body));
    member = user.token;
    hookId = hook.body.id;
  });
  after(async () => {
    api?.kill('SIGKILL');
    worker?.kill('SIGKILL');
    if (server?.pid && isAlive(server.pid)) process.kill(server.pid, 'SIGCONT');
    await Promise.all([server?.stop(), receiver.stop()]);
  });

  const eventOf = (eventId: string) => ({ type: 'space_content_updated', organizationId: org, spaceId: 's', revisionId: 'r', eventId });

  /** What a hung or a stopped server looks like from the API: 503 with Retry-After within 3 s (5 s if another answer came meanwhile; ingest and health within 2 s), naming Temporal. */
  async function assertUnavailable(): Promise<void> {
    // An event with a delivery: its hand-over needs the engine (the organization is known from the read model).
    const event = await answer(base, 'POST', '/v1/events', adminToken, eventOf(`evt_away_${randomBytes(4).toString('hex')}`));
    const create = await answer(base, 'POST', '/v1/orgs', adminToken, { id: `org-${randomBytes(3).toString('hex')}`, subdomain: `o-${randomBytes(3).toString('hex')}`, title: 'X' });
    const health = await answer(base, 'GET', '/healthz');
    for (const [what, seen] of Object.entries({ event, create, health })) {
      assert.equal(seen.status, 503, `${what}: ${JSON.stringify(seen.body)}`);
      assert.equal(seen.retryAfter, '1', what);
      assert.ok(seen.ms < (what === 'create' ? 5600 : 2600), `${what} answered after ${seen.ms} ms`);
    }
    assert.deepEqual(health.body.details.map((d: any) => d.field), ['temporal']);
    assert.match(health.body.message, /temporal is not reachable/);
    assert.equal((await answer(base, 'GET', '/livez')).status, 200);
  }

  it('a hung server: what the delivery log holds is still served to members (their tokens, installations, secrets, deliveries); a name no manifest could give is 404 at once', async function () {
    process.kill(server.pid!, 'SIGSTOP');
    try {
      for (const path of [`/v1/installations/${hookId}`, `/v1/installations/${hookId}/signing-secret`, `/v1/installations?org=${org}`, `/v1/deliveries?installation=${hookId}`]) {
        const seen = await answer(base, 'GET', path, member);
        assert.equal(seen.status, 200, `${path}: ${JSON.stringify(seen.body)}`);
      }
      assert.equal((await answer(base, 'GET', '/v1/installations', 'ptk_not-a-token')).status, 401);
      for (const name of ['x'.repeat(8000), 'Not_A_Name']) assert.equal((await answer(base, 'GET', `/v1/integrations/${name}`, member)).status, 404);
    } finally {
      process.kill(server.pid!, 'SIGCONT');
    }
  });

  it('a hung server (SIGSTOP): 503 within 3 s everywhere, and back by itself once it answers again', async function () {
    process.kill(server.pid!, 'SIGSTOP');
    try {
      await assertUnavailable();
    } finally {
      process.kill(server.pid!, 'SIGCONT');
    }
    await healthy(base, 20_000);
  });

  it('a hung server: each ingest answers 503 within 2 s of its own start, queued behind a hung hand-over or not; retried with the same eventId once it answers, each event is delivered once', async function () {
    const ids = Array.from({ length: 4 }, (_, i) => `evt_away_${randomBytes(3).toString('hex')}_${i}`);
    process.kill(server.pid!, 'SIGSTOP');
    let refused: Awaited<ReturnType<typeof answer>>[];
    try {
      // The first request's hand-over hangs; the others come while it does and wait behind it.
      refused = await Promise.all(ids.map(async (id, i) => {
        await new Promise((resolve) => setTimeout(resolve, 100 * i));
        return answer(base, 'POST', '/v1/events', adminToken, eventOf(id));
      }));
    } finally {
      process.kill(server.pid!, 'SIGCONT');
    }
    for (const [i, seen] of refused.entries()) {
      assert.equal(seen.status, 503, `${ids[i]}: ${JSON.stringify(seen.body)}`);
      assert.equal(seen.retryAfter, '1');
      assert.ok(seen.ms < 2000, `${ids[i]} answered after ${seen.ms} ms`);
    }
    await healthy(base, 20_000);
    for (const id of ids) await waitFor(async () => ((await answer(base, 'POST', '/v1/events', adminToken, eventOf(id))).status === 202 ? true : undefined), 30_000, `${id} to be accepted`, 500);
    const postsOf = (id: string) => receiver.requests.filter((request) => JSON.parse(request.body).eventId === id).length;
    await waitFor(async () => (ids.every((id) => postsOf(id) >= 1) ? true : undefined), 30_000, 'the deliveries');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.deepEqual(ids.map(postsOf), [1, 1, 1, 1]);
  });

  it('a dev server whose port (or UI port) another server has is refused, not taken for that one; one that stops says why', async function () {
    // The readiness check alone would have found the server already there, answering.
    await assert.rejects(startDevServer({ cliPath: process.env.TEMPORAL_CLI_RESOLVED!, namespace: 'default', port }), new RegExp(`port ${port} on 127.0.0.1 is taken by another process`));
    await assert.rejects(startDevServer({ cliPath: process.env.TEMPORAL_CLI_RESOLVED!, namespace: 'default', ui: { port } }), new RegExp(`^Error: PLATFORM_TEMPORAL_UI_PORT: port ${port} on 127.0.0.1 is taken by another process`));
    await assert.rejects(startDevServer({ cliPath: process.env.TEMPORAL_CLI_RESOLVED!, namespace: 'default', dbFile: '/proc/sys/temporal.db' }), /exited with code 1 before serving: .*unable to open database file/);
    await healthy(base);
  });

  it('a stopped server: 503 within 3 s, and the API recovers when a server returns on the same address', async function () {
    process.kill(server.pid!, 'SIGKILL');
    await waitFor(async () => (isAlive(server.pid!) ? undefined : true), 10_000, 'the server to die');
    await assertUnavailable();
    server = await startDevServer({ cliPath: process.env.TEMPORAL_CLI_RESOLVED!, namespace: 'default', dbFile, port });
    await healthy(base, 30_000);
  });
});

describe('the embedded default leaves no orphan, however it dies', function () {
  this.timeout(240_000);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'platform-embedded-'));
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  /** The dev server and a warm isolate under main.js: the processes that must die with it; and its organization's member. */
  async function ownedProcesses(base: string, mainPid: number): Promise<number[] & { org?: string; token?: string }> {
    const org = `org-${randomBytes(3).toString('hex')}`;
    await answer(base, 'POST', '/v1/orgs', adminToken, { id: org, subdomain: org, title: 'Org' });
    const { body: user } = await answer(base, 'POST', '/v1/users', adminToken, { id: `${org}-u`, orgs: [org] });
    const manifest = [`name: ${org}-app`, 'title: App', 'description: Answers.', `organization: ${org}`, 'visibility: private', 'scopes: []', 'script: src/index.js'].join('\n');
    const script = "const integration = { __platformIntegration: true, componentIds: [], eventTypes: [], async fetch() { return new Response('{}'); } };\nexport default integration;";
    assert.equal((await answer(base, 'POST', '/v1/integrations', user.token, { manifest, script })).status, 201);
    const { body: installation } = await answer(base, 'POST', `/v1/integrations/${org}-app/installations`, user.token, { target: { org } });
    assert.equal((await fetch(installation.urls.publicEndpoint.replace(/^http:\/\/[^/]+/, base))).status, 200);
    const owned = [...processTrees([mainPid])].filter((pid) => pid !== mainPid);
    assert.ok(owned.some((pid) => comm(pid) === 'temporal') && owned.some((pid) => comm(pid) === 'workerd'), JSON.stringify(owned.map(comm)));
    return Object.assign(owned, { org, token: user.token as string });
  }

  it('SIGKILL of node dist/src/main.js takes the dev server and every workerd with it; a restart comes up on the same data', async function () {
    const { main, base } = await embedded(dataDir, adminToken);
    const owned = await ownedProcesses(base, main.pid!);
    main.kill('SIGKILL');
    await waitFor(async () => (owned.every((pid) => !isAlive(pid)) ? true : undefined), 10_000, 'the owned processes to die');
    const again = await embedded(dataDir, adminToken);
    try {
      // The organization made before the kill is there: a user can join it.
      const joined = await answer(again.base, 'POST', '/v1/users', adminToken, { id: `${owned.org}-late`, orgs: [owned.org] });
      assert.equal(joined.status, 201, `the API answers on the same data: ${JSON.stringify(joined.body)}`);
    } finally {
      again.main.kill('SIGKILL');
    }
  });

  it('the death of its parent (as when `npm start` is SIGKILLed) stops main.js and everything it owns', async function () {
    const { main, wrapper, base } = await embedded(dataDir, adminToken, { parent: true });
    const owned = await ownedProcesses(base, main.pid!);
    wrapper!.kill('SIGKILL');
    await waitFor(async () => ([main.pid!, ...owned].every((pid) => !isAlive(pid)) ? true : undefined), 15_000, 'main.js and what it owns to stop');
  });

  it('SIGINT during start-up (a dev server that never answers) stops main.js at once, its dev server with it', async function () {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-starting-'));
    const cli = path.join(dir, 'temporal');
    writeFileSync(cli, '#!/bin/sh\nexec sleep 300\n', { mode: 0o755 });
    const main = spawn(process.execPath, [path.join(DIST, 'src', 'main.js')], { env: { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_CLI_PATH: cli, PLATFORM_DATA_DIR: dir, PORT: String(await freePort()), PLATFORM_TEMPORAL_PORT: String(await freePort()), PLATFORM_TEMPORAL_UI_PORT: String(await freePort()), LOG_LEVEL: 'error' }, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => main.once('exit', (code) => resolve(code)));
    const devServer = await waitFor(async () => childrenOf(main.pid!).find((pid) => comm(pid) === 'sleep'), 20_000, 'the dev server to be started');
    const signalled = Date.now();
    main.kill('SIGINT');
    assert.equal(await exited, 0);
    await waitFor(async () => (isAlive(devServer) ? undefined : true), 5_000, 'the dev server to die');
    assert.ok(Date.now() - signalled < 3_000, `stopped after ${Date.now() - signalled} ms`);
  });

  it('the worker on its own (docker-compose) stops on SIGTERM while it still waits for a Temporal server that does not answer', async function () {
    // Accepts connections and never answers: the worker's start-up waits on it.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-worker-starting-'));
      const worker = spawn(process.execPath, [path.join(DIST, 'src', 'main.js'), 'worker'], { env: { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: `127.0.0.1:${(silent.address() as net.AddressInfo).port}`, PLATFORM_ENCRYPTION_KEY: generateEncryptionKey(), PLATFORM_DATABASE_URL: `sqlite:${path.join(dir, 'log.db')}`, PLATFORM_WORKER_METRICS_PORT: String(await freePort()), LOG_LEVEL: 'error' }, stdio: 'ignore' });
      const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
      // Its start-up loads every module of the platform first: seconds on a CPU starved by the rest of the suite.
      await waitFor(async () => (existsSync(path.join(dir, 'log.db')) ? true : undefined), 30_000, 'the worker to open its log');
      await new Promise((resolve) => setTimeout(resolve, 500));
      const signalled = Date.now();
      worker.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.ok(Date.now() - signalled < 3_000, `stopped after ${Date.now() - signalled} ms`);
    } finally {
      silent.close();
    }
  });

  it('a start-up that fails (its PORT taken) says which setting, stops what it started and exits 1', async function () {
    const holder = http.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => holder.listen(port, '0.0.0.0', resolve));
    try {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-port-taken-'));
      const main = spawn(process.execPath, [path.join(DIST, 'src', 'main.js')], { env: { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_CLI_PATH: process.env.TEMPORAL_CLI_RESOLVED, PLATFORM_DATA_DIR: dir, PORT: String(port), PLATFORM_TEMPORAL_PORT: String(await freePort()), PLATFORM_TEMPORAL_UI_PORT: String(await freePort()), LOG_LEVEL: 'error' }, stdio: ['ignore', 'ignore', 'pipe'] });
      let said = '';
      main.stderr!.on('data', (chunk: Buffer) => (said += chunk.toString()));
      let devServer: number | undefined;
      const watching = setInterval(() => (devServer ??= childrenOf(main.pid!).find((pid) => isAlive(pid) && comm(pid) === 'temporal')), 50);
      const code = await new Promise((resolve) => main.once('exit', resolve));
      clearInterval(watching);
      assert.equal(code, 1);
      assert.match(said, new RegExp(`platform failed to start: PORT: port ${port} on 0.0.0.0 is taken by another process; set it to a free port`));
      assert.ok(devServer, 'the dev server had started');
      await waitFor(async () => (isAlive(devServer!) ? undefined : true), 5_000, 'the dev server to stop');
    } finally {
      holder.close();
    }
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to the whole process group, with deliveries in flight to a slow receiver, stops everything within 10 s`, async function () {
      // Each answer takes 3 s: attempts are in flight when the signal comes, more are queued.
      const receiver = await new ScriptedReceiver(() => ({ status: 200, delayMs: 3000 })).start();
      try {
        const { main, base } = await embedded(dataDir, adminToken, { detached: true });
        const owned = await ownedProcesses(base, main.pid!);
        const hook = await answer(base, 'POST', '/v1/integrations/webhook/installations', owned.token, { target: { org: owned.org, space: 's' }, configuration: { webhook_url: receiver.url, space_content_updated: true } });
        assert.equal(hook.status, 201, JSON.stringify(hook.body));
        const load = Array.from({ length: 200 }, (_, i) => answer(base, 'POST', '/v1/events', adminToken, { type: 'space_content_updated', organizationId: owned.org, spaceId: 's', revisionId: `r${i}` }).catch(() => undefined));
        await waitFor(async () => (receiver.requests.length > 0 ? true : undefined), 20_000, 'attempts to be in flight');
        const signalled = Date.now();
        process.kill(-main.pid!, signal);
        await waitFor(async () => ([main.pid!, ...owned].every((pid) => !isAlive(pid)) ? true : undefined), 10_000, 'the group to stop');
        const stoppedAfter = Date.now() - signalled;
        process.stdout.write(`      ${signal}: ${receiver.requests.length} attempts had reached the receiver; everything stopped after ${stoppedAfter} ms\n`);
        await Promise.all(load);
      } finally {
        await receiver.stop();
      }
    });
  }
});
