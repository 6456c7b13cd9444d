import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { Response as MiniflareResponse } from 'miniflare';
import { IsolatePool } from '../src/isolates/isolate-pool';
import { IsolateError } from '../src/isolates/isolate-error';
import { registry } from '../src/metrics';
import { waitFor } from './support/platform';
import { WorkerdProcess, WorkerdStartError } from '../src/isolates/workerd-process';
import { isAlive, listeningPorts, residentBytes } from '../src/system/procfs';

const MiB = 1024 * 1024;

/** A worker whose request handler (where workerd allows I/O) runs `body` and answers its result. */
function handlerModule(body: string): string {
  return `export default { async fetch(request) { ${body} } };`;
}

describe('a workerd process (real workerd through miniflare)', function () {
  this.timeout(30_000);

  it('has no outbound network at all, even inside a request: fetch and sockets to loopback are refused', async function () {
    const connections: string[] = [];
    const listener = net.createServer((socket) => {
      connections.push('connected');
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const { port } = listener.address() as net.AddressInfo;
    const isolate = await WorkerdProcess.start({
      modules: [
        {
          name: 'main.js',
          type: 'ESModule',
          contents: handlerModule(`
            const outcome = {};
            try { outcome.fetch = (await fetch('http://127.0.0.1:${port}/')).status; } catch (error) { outcome.fetch = 'refused'; }
            try { outcome.publicFetch = (await fetch('http://93.184.215.14/')).status; } catch (error) { outcome.publicFetch = 'refused'; }
            try {
              const { connect } = await import('cloudflare:sockets');
              await connect({ hostname: '127.0.0.1', port: ${port} }).opened;
              outcome.socket = 'opened';
            } catch (error) { outcome.socket = 'refused'; }
            return Response.json(outcome);`),
        },
      ],
      memoryLimitBytes: 128 * MiB,
    });
    try {
      const answer = await isolate.call('/', {}, 5000);
      assert.deepEqual(JSON.parse(answer.body.toString()), { fetch: 'refused', publicFetch: 'refused', socket: 'refused' });
      assert.deepEqual(connections, []);
    } finally {
      await isolate.dispose();
      listener.close();
    }
  });

  it('knows its own process when several start at once, and when one starts alone beside others', async function () {
    const start = () => WorkerdProcess.start({ modules: [{ name: 'main.js', type: 'ESModule', contents: handlerModule('return new Response(String(1));') }], memoryLimitBytes: 128 * MiB });
    const together = await Promise.all([start(), start(), start()]);
    const alone = await start();
    try {
      const all = [...together, alone];
      assert.equal(new Set(all.map((isolate) => isolate.pid)).size, 4);
      for (const isolate of all) assert.ok(listeningPorts([isolate.pid]).has(Number(isolate.url.port)), `pid ${isolate.pid} listens on its own socket`);
    } finally {
      await Promise.all([...together, alone].map((isolate) => isolate.dispose()));
    }
  });

  it('is killed at its deadline, and its process is gone', async function () {
    const isolate = await WorkerdProcess.start({ modules: [{ name: 'main.js', type: 'ESModule', contents: handlerModule('for (;;) {}') }], memoryLimitBytes: 128 * MiB });
    const started = Date.now();
    await assert.rejects(isolate.call('/', {}, 500));
    const elapsed = Date.now() - started;
    assert.equal(isolate.endReason, 'deadline');
    assert.ok(elapsed >= 500 && elapsed < 5000, `the call failed after ${elapsed} ms`);
    await isolate.dispose();
    assert.equal(isAlive(isolate.pid), false);
  });

  it('is killed past its memory bound', async function () {
    const isolate = await WorkerdProcess.start({
      modules: [{ name: 'main.js', type: 'ESModule', contents: handlerModule('const hoard = []; for (;;) hoard.push(new Array(1e5).fill(Math.random()));') }],
      memoryLimitBytes: 128 * MiB,
    });
    await assert.rejects(isolate.call('/', {}, 10_000));
    assert.equal(isolate.endReason, 'memory');
    await isolate.dispose();
    assert.equal(isAlive(isolate.pid), false);
  });

  it('leaves no wrapper script behind once the process that made it exits', async function () {
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', `require(${JSON.stringify(require.resolve('../src/isolates/workerd-process'))}); console.log(process.env.MINIFLARE_WORKERD_PATH)`], { env: { PATH: process.env.PATH } });
    assert.match(stdout, /platform-workerd-/);
    assert.equal(existsSync(path.dirname(stdout.trim())), false);
  });

  it('says why it did not start, without this host’s paths', async function () {
    await assert.rejects(
      WorkerdProcess.start({ modules: [{ name: 'main.js', type: 'ESModule', contents: 'export default {' }], memoryLimitBytes: 128 * MiB }),
      (err: Error) => err instanceof WorkerdStartError && /^SyntaxError: Unexpected end of input/.test(err.message) && !err.message.includes(process.cwd()),
    );
  });
});

describe('the isolate pool (real workerd)', function () {
  this.timeout(30_000);
  const script = "export default { async fetch() { return new Response('ok'); } };";
  const pool = (options: Partial<ConstructorParameters<typeof IsolatePool>[0]> = {}) =>
    new IsolatePool({ loadScript: async () => script, outbound: async () => { throw new Error('no network'); }, bindings: () => ({}), ...options });
  /** Processes the pool stopped for `reason` so far (platform_isolates_stopped_total). */
  const stoppedFor = async (reason: string) => (await registry.getSingleMetric('platform_isolates_stopped_total')?.get())?.values.find((value) => value.labels.reason === reason)?.value ?? 0;
  /** Each installation of its own organization unless one is named. */
  const call = (p: IsolatePool, installation: string, organization = installation, body = '') => p.call({ integration: 'x', version: 1, installation, organization }, '/v1', { method: 'POST', headers: {}, body: Buffer.from(body) }, 5000);

  it('reuses a warm isolate per version and organization, and stops the idle ones', async function () {
    const isolates = pool({ idleMs: 200 });
    try {
      assert.equal((await call(isolates, 'a')).status, 200);
      const [first] = isolates.warm();
      assert.equal((await call(isolates, 'a')).status, 200);
      assert.deepEqual(isolates.warm().map((w) => w.pid), [first!.pid], 'the same process served both calls');
      assert.ok(first!.coldStartMs! > 0);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await isolates.evict();
      assert.deepEqual(isolates.warm(), []);
      assert.equal(isAlive(first!.pid), false);
    } finally {
      await isolates.close();
    }
  });

  it('stops an isolate that spends CPU long after its last call (a loop left behind, which no timer inside can stop), not an idle one', async function () {
    const spinner = "export default { async fetch(request, env, ctx) { if ((await request.text()) === 'spin') ctx.waitUntil(new Promise((resolve) => setTimeout(resolve, 50)).then(() => { for (;;) {} })); return new Response('ok'); } };";
    const isolates = pool({ loadScript: async () => spinner, backgroundMs: 300 });
    const stopped = () => stoppedFor('background_cpu');
    const before = await stopped();
    try {
      for (const [installation, body] of [['spins', 'spin'], ['idles', '']]) assert.equal((await call(isolates, installation!, installation, body)).status, 200);
      const spinning = isolates.warm().find((w) => w.key === 'x@1/spins')!.pid;
      await new Promise((resolve) => setTimeout(resolve, 400));
      await isolates.evict(); // past backgroundMs: each one's CPU time is noted
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await isolates.evict();
      assert.deepEqual(isolates.warm().map((w) => w.key), ['x@1/idles']);
      assert.equal(isAlive(spinning), false);
      assert.equal(await stopped(), before + 1);
    } finally {
      await isolates.close();
    }
  });

  it("refuses the egress and API binding of work left behind past its bound, and stops its process (background work that spends no CPU)", async function () {
    // After the response: a fetch and an API call, as many ms later as the body says.
    const later = "export default { async fetch(request, env, ctx) { const ms = Number(await request.text()); ctx.waitUntil(new Promise((resolve) => setTimeout(resolve, ms)).then(() => Promise.all([fetch('http://example.test/' + ms), env.platformApi.fetch('http://api/' + ms)]))); return new Response('ok'); } };";
    const seen: string[] = [];
    const isolates = pool({
      loadScript: async () => later,
      backgroundMs: 1000,
      outbound: async (request) => {
        seen.push(`egress ${new URL(request.url).pathname}`);
        return new MiniflareResponse('fine');
      },
      bindings: () => ({
        platformApi: (req, res) => {
          seen.push(`api ${req.url}`);
          res.end('fine');
        },
      }),
    });
    const stopped = () => stoppedFor('work_left_behind');
    const before = await stopped();
    try {
      // a's work comes well within the bound, b's well past it: timers run late on a loaded machine.
      assert.equal((await call(isolates, 'a', 'a', '100')).status, 200);
      assert.equal((await call(isolates, 'b', 'b', '2500')).status, 200);
      const b = isolates.warm().find((w) => w.key === 'x@1/b')!.pid;
      await waitFor(async () => (isAlive(b) ? undefined : true), 10_000, "b's process to be stopped");
      assert.deepEqual(seen.sort(), ['api /100', 'egress /100'], "a's work within the bound went out; b's past it did not");
      assert.deepEqual(isolates.warm().map((w) => w.key), ['x@1/a']);
      assert.equal(isAlive(b), false);
      assert.equal(await stopped(), before + 1);
    } finally {
      await isolates.close();
    }
  });

  it('stops the least recently used over the memory budget or the process cap', async function () {
    const isolates = pool({ memoryBudgetBytes: 80 * MiB, maxProcesses: 2 });
    try {
      for (const installation of ['a', 'b', 'c']) assert.equal((await call(isolates, installation)).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(isolates.warm().length, 2, 'the process cap');
      await isolates.evict();
      assert.equal(isolates.warm().length, 1, 'one workerd (about 55 MiB) fits in 80 MiB, two do not');
    } finally {
      await isolates.close();
    }
  });

  // Answers after as many ms as its body says.
  const slow = 'export default { async fetch(request) { const ms = Number(await request.text()); await new Promise((resolve) => setTimeout(resolve, ms)); return new Response("ok"); } };';

  it('counts a process idle from the end of its last call, not its start: a call longer than the idle time is not stopped as it ends', async function () {
    const isolates = pool({ loadScript: async () => slow, idleMs: 300 });
    try {
      assert.equal((await call(isolates, 'a', 'a', '600')).status, 200);
      await isolates.evict();
      assert.deepEqual(isolates.warm().map((w) => w.key), ['x@1/a'], 'just used, although its call began 600 ms ago');
      await new Promise((resolve) => setTimeout(resolve, 400));
      await isolates.evict();
      assert.deepEqual(isolates.warm(), [], 'idle past 300 ms since its call ended');
    } finally {
      await isolates.close();
    }
  });

  // "grow" keeps 46 MiB for good; a number answers after as many ms.
  const growing = 'export default { async fetch(request) { const body = await request.text(); if (body === "grow") { globalThis.hoard = new Float64Array(6e6).fill(1); return new Response("grown"); } await new Promise((resolve) => setTimeout(resolve, Number(body))); return new Response("ok"); } };';
  /** A call of `ms` that may last 15 s (the helper's calls get 5). */
  const long = (p: IsolatePool, installation: string, ms: number) => p.call({ integration: 'x', version: 1, installation, organization: installation }, '/v1', { method: 'POST', headers: {}, body: Buffer.from(String(ms)) }, 15_000);
  /** Grows the installation's process past 90 MiB (an idle workerd holds about 55, grown about 100) and waits for the watchdog to see it. */
  const grow = async (p: IsolatePool, installation: string, pid: number) => {
    assert.equal((await call(p, installation, installation, 'grow')).status, 200);
    await waitFor(async () => (residentBytes(pid)! > 90 * MiB ? true : undefined), 5000, 'the process to pass its bound');
    await new Promise((resolve) => setTimeout(resolve, 200)); // the watchdog reads every 20 ms
  };

  it('replaces a process past its memory bound without failing the calls in it, and stops it once they have ended', async function () {
    // Replaced past 90 MiB, killed past 135.
    const isolates = pool({ loadScript: async () => growing, memoryLimitBytes: 90 * MiB });
    const replaced = await stoppedFor('memory');
    try {
      assert.equal((await call(isolates, 'a', 'a', '0')).status, 200);
      const [first] = isolates.warm();
      const inFlight = long(isolates, 'a', 8000);
      await grow(isolates, 'a', first!.pid);
      const next = await call(isolates, 'a', 'a', '0');
      assert.equal(next.status, 200);
      const [second] = isolates.warm();
      assert.notEqual(second!.pid, first!.pid, 'the next call went to a new process');
      assert.equal(isAlive(first!.pid), true, 'the old process still serves the call in it');
      const answer = await inFlight;
      assert.deepEqual([answer.status, answer.body.toString()], [200, 'ok'], 'the call in it was not cut short');
      await waitFor(async () => (isAlive(first!.pid) ? undefined : true), 5000, 'the old process to be stopped');
      assert.equal(await stoppedFor('memory'), replaced + 1);
    } finally {
      await isolates.close();
    }
  });

  it('at its cap, starts the replacement of a process past its memory bound in the room of an idle one, not after the calls still in the old one', async function () {
    // 8 processes at most, 2 an organization; calls wait 2 s for room.
    const isolates = pool({ loadScript: async () => growing, memoryLimitBytes: 90 * MiB, maxProcesses: 8, admissionWaitMs: 2000 });
    try {
      for (const installation of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) assert.equal((await call(isolates, installation, installation, '0')).status, 200);
      const first = isolates.warm().find((w) => w.key === 'x@1/a')!;
      const inFlight = long(isolates, 'a', 6000);
      await grow(isolates, 'a', first.pid);
      // The old process still holds its room for 6 s, past the 2 s a start waits for room.
      assert.equal((await call(isolates, 'a', 'a', '0')).status, 200);
      assert.notEqual(isolates.warm().find((w) => w.key === 'x@1/a')!.pid, first.pid);
      assert.equal(isolates.warm().length, 7, 'an idle one made room: with the old one still finishing its call, 8 run');
      assert.equal((await inFlight).status, 200);
    } finally {
      await isolates.close();
    }
  });

  it('makes room by stopping the process whose last call ended first, not the one whose call began first', async function () {
    const isolates = pool({ loadScript: async () => slow, maxProcesses: 2 });
    try {
      for (const installation of ['a', 'b']) assert.equal((await call(isolates, installation, installation, '0')).status, 200);
      // a's call begins first and ends last; b's begins later and ends first.
      const inA = long(isolates, 'a', 2000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal((await call(isolates, 'b', 'b', '0')).status, 200);
      assert.equal((await inA).status, 200);
      const stopped = await stoppedFor('make_room');
      assert.equal((await call(isolates, 'c', 'c', '0')).status, 200);
      assert.equal(await stoppedFor('make_room'), stopped + 1);
      assert.deepEqual(isolates.warm().map((w) => w.key).sort(), ['x@1/a', 'x@1/c'], 'b was idle longest');
    } finally {
      await isolates.close();
    }
  });

  it("never runs more processes than the cap: a new one waits for one to become idle, and no call is cut short to make room", async function () {
    const isolates = pool({ loadScript: async () => slow, maxProcesses: 1, memoryBudgetBytes: 1 });
    const gauges = async () => Promise.all(['platform_isolate_processes', 'platform_isolate_starts_waiting'].map(async (name) => (await registry.getSingleMetric(name)!.get()).values[0]!.value));
    const before = await gauges();
    try {
      const ended: string[] = [];
      const inFlight = call(isolates, 'a', 'a', '1500').finally(() => ended.push('a'));
      await new Promise((resolve) => setTimeout(resolve, 500));
      const other = call(isolates, 'b', 'b', '0').finally(() => ended.push('b'));
      await new Promise((resolve) => setTimeout(resolve, 300));
      await isolates.evict();
      assert.deepEqual(isolates.warm().map((w) => w.key), ['x@1/a'], 'b waits; a, busy, is neither stopped nor joined by a second process');
      assert.deepEqual(await gauges(), [before[0]! + 1, before[1]! + 1], 'one process, one start waiting');
      assert.equal((await inFlight).status, 200, "a's call ends as it would have alone");
      assert.equal((await other).status, 200);
      assert.deepEqual(ended, ['a', 'b'], 'b started once a was idle');
      assert.deepEqual(isolates.warm().map((w) => w.key), ['x@1/b'], 'a, idle, made room for b');
      assert.deepEqual(await gauges(), [before[0]! + 1, before[1]!]);
    } finally {
      await isolates.close();
    }
    assert.deepEqual(await gauges(), before, 'none once the pool is closed');
  });

  it('starts a process in the room of one it stopped only once that one has exited, and serves a call waiting for room once a killed one is gone', async function () {
    /** For each start: the processes started before it that were still alive as it began. */
    const aliveAtStart: number[][] = [];
    const started: number[] = [];
    const isolates = pool({
      loadScript: async () => (aliveAtStart.push(started.filter(isAlive)), slow),
      onStarted: (process) => void started.push(process.pid),
      maxProcesses: 1,
    });
    const key = (installation: string) => ({ integration: 'x', version: 1, installation, organization: installation });
    const request = (ms: number) => ({ method: 'POST', headers: {}, body: Buffer.from(String(ms)) });
    try {
      assert.equal((await isolates.call(key('a'), '/v1', request(0), 5000)).status, 200);
      // a, idle, is stopped to make room for b.
      assert.equal((await isolates.call(key('b'), '/v1', request(0), 5000)).status, 200);
      // b is killed at its deadline while c waits for room.
      const killed = isolates.call(key('b'), '/v1', request(3000), 300);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const waiting = isolates.call(key('c'), '/v1', request(0), 5000);
      await assert.rejects(killed, (err: Error) => err instanceof IsolateError && err.status === 504);
      assert.equal((await waiting).status, 200);
      assert.deepEqual(aliveAtStart, [[], [], []], 'no process was still running as the next one began');
    } finally {
      await isolates.close();
    }
  });

  it('waits for a process that is exiting rather than stop another warm one for its room', async function () {
    const isolates = pool({ maxProcesses: 2, idleMs: 250 });
    try {
      assert.equal((await call(isolates, 'a')).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 400));
      assert.equal((await call(isolates, 'b')).status, 200);
      const madeRoom = await stoppedFor('make_room');
      // a, idle past its time, is stopped; c asks for room while it exits.
      const evicted = isolates.evict();
      assert.equal((await call(isolates, 'c')).status, 200);
      await evicted;
      assert.deepEqual(isolates.warm().map((w) => w.key).sort(), ['x@1/b', 'x@1/c'], 'b stays warm');
      assert.equal(await stoppedFor('make_room'), madeRoom, 'no process was stopped to make room');
    } finally {
      await isolates.close();
    }
  });

  it('refuses a call (503) when no process becomes idle within the admission wait', async function () {
    const isolates = pool({ loadScript: async () => slow, maxProcesses: 1, admissionWaitMs: 300 });
    try {
      const inFlight = call(isolates, 'a', 'a', '1500');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = performance.now();
      await assert.rejects(call(isolates, 'b'), (err: Error) => err instanceof IsolateError && err.status === 503 && /as many integration processes as it may \(1, 1 an organization\)/.test(err.message));
      assert.ok(performance.now() - started < 1000, 'refused after the wait, not after a');
      assert.equal((await inFlight).status, 200);
      assert.equal((await call(isolates, 'b')).status, 200, 'room again once a is idle');
    } finally {
      await isolates.close();
    }
  });

  it('refuses the calls waiting for room when it closes, and starts nothing after', async function () {
    const isolates = pool({ loadScript: async () => slow, maxProcesses: 1 });
    const inFlight = call(isolates, 'a', 'a', '1000').catch((err: Error) => err);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const waiting = call(isolates, 'b').catch((err: Error) => err);
    const started = performance.now();
    await isolates.close();
    const refused = await waiting;
    assert.ok(refused instanceof IsolateError && refused.status === 503 && refused.message === 'the platform is stopping', String(refused));
    assert.ok(performance.now() - started < 1000, 'at once, not after the admission wait');
    await inFlight; // its process was stopped under it
    await assert.rejects(call(isolates, 'c'), (err: Error) => err instanceof IsolateError && err.status === 503);
    assert.deepEqual(isolates.warm(), []);
  });

  it("holds an organization to its share of the cap: its burst waits for its own processes, another organization's call does not", async function () {
    // A cap of 4: an organization's share is 1.
    const isolates = pool({ loadScript: async () => slow, maxProcesses: 4 });
    try {
      let firstEnded = false;
      const first = call(isolates, 'a1', 'busy', '3000').finally(() => (firstEnded = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const second = call(isolates, 'a2', 'busy', '0');
      assert.equal((await call(isolates, 'b1', 'calm', '0')).status, 200);
      assert.equal(firstEnded, false, 'the other organization is served at once, not once a1 is idle');
      assert.deepEqual(isolates.warm().map((w) => w.key).sort(), ['x@1/a1', 'x@1/b1'], "a2 waits for its organization's share, not for the cap");
      assert.equal((await first).status, 200);
      assert.equal((await second).status, 200);
      assert.deepEqual(isolates.warm().map((w) => w.key).sort(), ['x@1/a2', 'x@1/b1'], 'a1, idle, made room for a2; b1 untouched');
    } finally {
      await isolates.close();
    }
  });
});
