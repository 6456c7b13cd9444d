import assert from 'node:assert/strict';
import { TestPlatform, waitFor } from './support/platform';
import { install, publishExample } from './support/examples';
import { ScriptedReceiver } from './support/receiver';

/** One integration, many behaviours by path: what tenants' code may try inside its isolate. */
const SCRIPT = `import { createIntegration } from 'integration-platform/runtime';
let calls = 0;
globalThis.lastCaller = globalThis.lastCaller ?? 'nobody';
export default createIntegration({
  async fetch(request, context) {
    const path = new URL(request.url).pathname.split('/public')[1] ?? '';
    if (path === '/count') {
      calls += 1;
      const before = globalThis.lastCaller;
      globalThis.lastCaller = context.environment.id;
      return Response.json({ calls, before });
    }
    if (path === '/spin') for (;;) {}
    if (path === '/sleep') { await new Promise((resolve) => setTimeout(resolve, 6500)); return Response.json({ slept: true }); }
    if (path === '/hog') { const hoard = []; for (;;) hoard.push(new Array(1e5).fill(Math.random())); }
    if (path === '/throw') throw new Error('internal detail at /srv/secret.js:42');
    // 12 MiB, streamed: an answer, or an outbound request's body, past the platform's 10 MiB.
    const twelveMiB = () => { let sent = 0; const chunk = new Uint8Array(1024 * 1024); return new ReadableStream({ pull(c) { if (sent++ < 12) c.enqueue(chunk); else c.close(); } }); };
    if (path === '/flood') return new Response(twelveMiB());
    if (path === '/upload') {
      const answer = await fetch(context.environment.configuration.forward_url, { method: 'POST', body: twelveMiB(), duplex: 'half' });
      return new Response(await answer.text(), { status: answer.status });
    }
    if (path === '/host') return Response.json({ process: typeof process, fs: await import('node:fs').then(() => 'loaded', () => 'refused'), require: (() => { try { require('node:child_process'); return 'loaded'; } catch { return 'refused'; } })() });
    if (path === '/later') {
      const url = context.environment.configuration.forward_url;
      const after = (ms, what) => new Promise((resolve) => setTimeout(resolve, ms)).then(() => fetch(url, { method: 'POST', body: JSON.stringify({ what, installationId: context.environment.id }) }));
      context.waitUntil(after(1000, 'after 1 s'));
      context.waitUntil(after(35000, 'after 35 s'));
      return Response.json({ scheduled: true });
    }
    return Response.json({ ok: true });
  },
  events: { space_content_updated: async () => undefined },
});
`;

describe('isolates: tenants apart, limits enforced from outside', function () {
  this.timeout(180_000);
  const forwarded = new ScriptedReceiver();
  let platform: TestPlatform;
  let a: { org: string; token: string };
  let b: { org: string; token: string };
  let inA: any;
  let inA2: any;
  let inB: any;

  const call = async (installation: any, path: string) => {
    const started = performance.now();
    const answer = await fetch(`${installation.urls.publicEndpoint}${path}`);
    return { status: answer.status, body: await answer.text(), ms: performance.now() - started };
  };

  before(async function () {
    await forwarded.start();
    platform = await new TestPlatform(__filename, { egressAllow: [`127.0.0.1:${new URL(forwarded.url).port}`] }).start();
    [a, b] = await Promise.all([platform.tenant(), platform.tenant()]);
    const name = await publishExample(platform, a, 'webhook-receiver', { edit: (manifest) => [manifest.replace('visibility: private', 'visibility: public'), SCRIPT] });
    inA = await install(platform, a, name, { forward_url: forwarded.url });
    inA2 = await install(platform, a, name, { forward_url: forwarded.url });
    inB = await install(platform, b, name, { forward_url: forwarded.url });
  });
  after(async () => Promise.all([platform?.stop(), forwarded.stop()]));

  it('shares no globals between installations, of one organization or of two (one isolate per version and installation)', async function () {
    assert.deepEqual(JSON.parse((await call(inA, '/count')).body), { calls: 1, before: 'nobody' });
    assert.deepEqual(JSON.parse((await call(inA, '/count')).body), { calls: 2, before: inA.id }, 'an installation keeps its isolate while warm');
    assert.deepEqual(JSON.parse((await call(inA2, '/count')).body), { calls: 1, before: 'nobody' }, 'another installation of the same organization sees nothing of it');
    assert.deepEqual(JSON.parse((await call(inB, '/count')).body), { calls: 1, before: 'nobody' }, 'another organization sees nothing of it');
    const warm = platform.isolates.warm();
    assert.equal(new Set(warm.map((w) => w.pid)).size, 3);
  });

  it('gives the code no host objects', async function () {
    assert.deepEqual(JSON.parse((await call(inA, '/host')).body), { process: 'undefined', fs: 'refused', require: 'refused' });
  });

  it('answers 500 without a stack when the code throws', async function () {
    const answer = await call(inA, '/throw');
    assert.equal(answer.status, 500);
    assert.deepEqual(JSON.parse(answer.body), { error: 'Internal server error' });
  });

  it('an endless loop is killed at 10 s while another organization’s endpoint keeps answering, never waiting on it, and answers again within 15 s', async function () {
    await call(inB, '/count');
    const spinning = call(inA, '/spin');
    const latencies: number[] = [];
    const started = Date.now();
    while (Date.now() - started < 9000) {
      const answer = await call(inB, '/count');
      assert.equal(answer.status, 200);
      latencies.push(answer.ms);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const spun = await spinning;
    assert.equal(spun.status, 504);
    assert.match(spun.body, /did not answer within 10 s/);
    const sorted = [...latencies].sort((x, y) => x - y);
    const p99 = sorted[Math.floor(sorted.length * 0.99)]!;
    // Never queued behind the loop (that would be seconds, up to its 10 s kill); its p99 target (250 ms) is timed in the bench, scenario (h), not on a busy test machine.
    process.stdout.write(`      other organization beside the loop: ${latencies.length} calls, p99 ${p99.toFixed(0)} ms, slowest ${sorted.at(-1)!.toFixed(0)} ms\n`);
    assert.ok(latencies.length >= 20 && sorted.at(-1)! < 5000, `other organization: ${latencies.length} calls, p99 ${p99.toFixed(0)} ms, slowest ${sorted.at(-1)!.toFixed(0)} ms`);
    const back = await waitFor(async () => {
      const answer = await call(inA, '/');
      return answer.status === 200 ? answer : undefined;
    }, 15_000, 'the killed organization to answer again', 200);
    assert.deepEqual(JSON.parse(back.body), { ok: true });
    assert.deepEqual(JSON.parse((await call(inA, '/count')).body).calls, 1, 'a new process: its globals are new');
  });

  it('an allocation loop is killed at 1.5 times its 128 MiB (past 128 it would only be replaced once its call ended); the next call gets a new isolate', async function () {
    const hog = await call(inA, '/hog');
    assert.equal(hog.status, 502);
    assert.match(hog.body, /used more than 192 MiB/);
    assert.equal((await call(inA, '/')).status, 200);
  });

  it('cuts off an answer, and an outbound request body, past 10 MiB (the platform holds each in memory); the isolate answers on', async function () {
    const flood = await call(inA, '/flood');
    assert.deepEqual([flood.status, JSON.parse(flood.body).message], [502, "the integration's answer was cut off: its answer exceeds 10 MiB"]);
    const upload = await call(inA, '/upload');
    assert.deepEqual([upload.status, JSON.parse(upload.body)], [413, { error: 'egress_refused', message: 'the request body exceeds 10 MiB' }]);
    assert.equal((await call(inA, '/')).status, 200);
  });

  it('lets waitUntil work run after the response, for 30 s at most', async function () {
    const answer = await call(inA, '/later');
    assert.deepEqual(JSON.parse(answer.body), { scheduled: true });
    await waitFor(async () => (forwarded.requests.some((r) => JSON.parse(r.body).what === 'after 1 s') ? true : undefined), 10_000, 'the 1 s work');
    await new Promise((resolve) => setTimeout(resolve, 37_000));
    assert.deepEqual(forwarded.requests.map((r) => JSON.parse(r.body).what).filter((what) => what === 'after 35 s'), []);
  });
});

describe("isolates: one organization's burst holds its share of the pool, not the pool", function () {
  this.timeout(120_000);
  let platform: TestPlatform;
  let a: { org: string; token: string };
  let b: { org: string; token: string };
  const installed: any[] = [];

  before(async function () {
    // A cap of 4: an organization's share is 1.
    platform = await new TestPlatform(__filename, { maxIsolates: 4 }).start();
    [a, b] = await Promise.all([platform.tenant(), platform.tenant()]);
    const name = await publishExample(platform, a, 'webhook-receiver', { edit: (manifest) => [manifest.replace('visibility: private', 'visibility: public'), SCRIPT] });
    for (const tenant of [a, a, b]) installed.push(await install(platform, tenant, name, { forward_url: 'http://127.0.0.1:9/unused' }));
  });
  after(async () => platform?.stop());

  it('answers 503 with Retry-After once its share is busy past the admission wait, while another organization is served at once', async function () {
    const [busy, waiting, other] = installed;
    const timed = async (installation: any, path: string) => {
      const started = performance.now();
      const answer = await fetch(`${installation.urls.publicEndpoint}${path}`);
      return { status: answer.status, retryAfter: answer.headers.get('retry-after'), body: (await answer.json()) as Record<string, unknown>, ms: performance.now() - started };
    };
    const sleeping = timed(busy, '/sleep');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const [refused, served] = await Promise.all([timed(waiting, '/'), timed(other, '/')]);
    assert.deepEqual([served.status, served.body], [200, { ok: true }]);
    assert.ok(served.ms < 2000, `the other organization waited ${served.ms} ms`);
    assert.equal(refused.status, 503);
    assert.equal(refused.retryAfter, '1');
    assert.equal(refused.body.error, 'integration_unavailable');
    assert.match(String(refused.body.message), /as many integration processes as it may \(4, 1 an organization\) and none became free within 5 s/);
    assert.equal((await sleeping).status, 200);
    assert.deepEqual((await timed(waiting, '/')).body, { ok: true }, 'served once its organization has an idle process to make room with');
  });

  it('delays an event to integration code that finds no room, without spending its attempts', async function () {
    const [busy, waiting] = installed;
    const sleeping = fetch(`${busy.urls.publicEndpoint}/sleep`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Its organization's one process is busy for 6 s: the attempt batch finds no room for 5 s, then runs again.
    const answer = await platform.ingest({ type: 'space_content_updated', organizationId: a.org, spaceId: 'space', revisionId: 'r1' });
    assert.equal(answer.status, 202);
    const id = answer.body.deliveries.find((delivery: string) => delivery.endsWith(waiting.id));
    const delivery = await platform.finalDelivery(id, a.token);
    assert.equal((await sleeping).status, 200);
    assert.equal(delivery.status, 'delivered');
    assert.deepEqual(delivery.attempts.map((attempt: any) => [attempt.attempt, attempt.statusCode]), [[1, delivery.attempts[0].statusCode]], 'one attempt, made once there was room');
    assert.ok(delivery.attempts[0].statusCode < 300);
  });
});
