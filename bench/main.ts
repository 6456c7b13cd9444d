import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MAX_RETRIES } from '../src/webhooks/schedule';
import { closedLoop, openLoop, until } from './load';
import { BenchReceiver } from './receiver';
import { noisyNeighbourReport, noisyNeighbourScenario } from './neighbours';
import { publicEndpointScenario } from './runtime';
import { cpuNeighbourScenario } from './cpu-neighbours';
import { devLoopScenario } from './dev-loop';
import { logNeighbourScenario } from './log-neighbours';
import { startRelay } from './relay';
import { settled, startEmbedded, startSplit, steadyRss } from './stack';
import { capacityReport, capacityScenario } from './capacity';
import { leakReport, leakScenario } from './leak';
import { operationsReport, operationsScenario } from './operations';
import { orderedReport, orderedScenario } from './ordered';
import { svixReport, svixScenario } from './svix';
import { listReport, listScenario } from './list-queries';
import { bare, bodiesOf, call, cpuBudget, DRAIN_MS, events, ingest, ingestClient, latest, ratio, round, tenant, throughPlatform } from './drive';
import { serializePayload } from '../src/webhooks/events';

/**
 * `npm run bench` (delivery at scale): each scenario runs through the platform, then the
 * bare loop (the same signed bodies POSTed straight to the same verifying receiver) runs in
 * the same process, so every figure stands beside its own baseline. Scenarios a-d run on
 * the embedded default (`npm start`); e on the production shape (API and worker apart), so
 * that the worker alone can be killed. Results go to bench-results/.
 */
const SCALE = Number(process.env.BENCH_SCALE ?? 1);
/** BENCH_ONLY=a,e runs only those scenarios (comparing two trees on one, say); all by default. */
const ONLY = process.env.BENCH_ONLY?.split(',').map((name) => name.trim());
const only = (scenario: string) => !ONLY || ONLY.includes(scenario);

async function main(): Promise<void> {
  const receiver = await new BenchReceiver().start();
  const results: Record<string, unknown> = { date: new Date().toISOString(), machine: { cpus: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30) }, scale: SCALE };
  process.stderr.write('bench: starting the embedded default (npm start)\n');
  let stack = await startEmbedded();
  try {
    // Fresh, nothing delivered yet: the service's memory just started, and once steady at idle (target <= 200 MiB).
    await settled(stack);
    results.embeddedStartedRssMiB = stack.rss();
    results.embeddedIdleRssMiB = await steadyRss(stack);
    const a = await tenant(stack, receiver, 1);
    // (a) 30,000 events, concurrency 64.
    if (only('a')) {
    const aEvents = events(a, Math.round(30_000 * SCALE), 'a');
    receiver.reset();
    const aPlatform = await throughPlatform(stack, receiver, 'a', aEvents, (task) => closedLoop(aEvents.length, 64, task));
    const [aRss, aLogMiB] = [stack.peakRss(), stack.logSizeMiB()];
    // The same, from a producer that sends 10 events a request (/v1/events/batch): not (a)'s target, what batching buys.
    const abEvents = events(a, aEvents.length, 'ab');
    receiver.reset();
    const aBatched = await throughPlatform(stack, receiver, 'a batched', abEvents, (task) => closedLoop(Math.ceil(abEvents.length / 10), 64, task), abEvents.length, 10);
    receiver.reset();
    const aBare = await bare(receiver, 'a', bodiesOf(aEvents, a.installations[0]!), (task) => closedLoop(aEvents.length, 64, task));
    receiver.reset();
    const relay = await startRelay(receiver.url, receiver.secrets[0]!);
    const aRelay = await throughPlatform(relay, receiver, 'a relay', aEvents, (task) => closedLoop(aEvents.length, 64, task)).finally(relay.stop);
    results.a = {
      platform: aPlatform,
      bare: aBare,
      ratio: ratio(aPlatform.deliveredPerS, aBare.deliveredPerS),
      relay: aRelay,
      relayRatio: ratio(aRelay.deliveredPerS, aBare.deliveredPerS),
      cpuBudget: cpuBudget(aPlatform, aRelay, aBare.deliveredPerS, aEvents.length, os.cpus().length),
      batched: aBatched,
      batchedRatio: ratio(aBatched.deliveredPerS, aBare.deliveredPerS),
      peakRssMiB: aRss,
      totalRssMiB: Object.values(aRss).reduce((s: number, v) => s + (v ?? 0), 0),
      logMiB: aLogMiB,
    };
    }

    // (b) a steady 100 events/s for 60 s.
    if (only('b')) {
    const bEvents = events(a, Math.round(6000 * SCALE), 'b');
    receiver.reset();
    const bPlatform = await throughPlatform(stack, receiver, 'b', bEvents, (task) => openLoop(100, bEvents.length / 100, task));
    receiver.reset();
    const bBodies = bodiesOf(bEvents.slice(0, 1500), a.installations[0]!);
    const bBare = await bare(receiver, 'b', bBodies, (task) => openLoop(100, bBodies.length / 100, task));
    results.b = { platform: bPlatform, bare: bBare, logMiB: stack.logSizeMiB() };
    }

    // (c) one event to 50 installations, 1,000 times.
    if (only('c')) {
    const c = await tenant(stack, receiver, 50);
    const cEvents = events(c, Math.round(1000 * SCALE), 'c');
    receiver.reset();
    const cPosts = () => [...receiver.posts.values()].reduce((sum, posts) => sum + posts.length, 0);
    const cStarted = performance.now();
    const cPlatform = await throughPlatform(stack, receiver, 'c', cEvents, (task) => closedLoop(cEvents.length, 64, task), cEvents.length);
    await until(() => cPosts() >= cEvents.length * 50, DRAIN_MS);
    // Up to the last arrival, as the bare loop's rate is (not up to when polling noticed it).
    const cLast = latest([...receiver.posts.values()].flatMap((posts) => posts.map((post) => post.at)));
    const cDeliveriesPerS = round(cPosts() / ((cLast - cStarted) / 1000));
    receiver.reset();
    const cBodies = cEvents.flatMap((event) => c.installations.map((id) => serializePayload(event, `${event.eventId}-bare-${id}`, id)));
    const cBare = await bare(receiver, 'c', cBodies, (task) => closedLoop(cBodies.length, 64, task));
    const { duplicates: _perEvent, ...cFigures } = cPlatform; // 50 POSTs an event are no duplicates here
    results.c = { platform: { ...cFigures, deliveriesPerS: cDeliveriesPerS }, bare: cBare, ratio: ratio(cDeliveriesPerS, cBare.deliveredPerS), logMiB: stack.logSizeMiB() };
    }

    // (d) 10% of receiver answers are 500.
    if (only('d')) {
    const dEvents = events(a, Math.round(10_000 * SCALE), 'd');
    const failing = () => (Math.random() < 0.1 ? 500 : 200);
    receiver.reset(failing);
    const dPlatform = await throughPlatform(stack, receiver, 'd', dEvents, (task) => closedLoop(dEvents.length, 64, task));
    const gaps = receiver.retryGaps();
    receiver.reset(failing);
    const dBodies = bodiesOf(dEvents, a.installations[0]!);
    const dBare = await bare(receiver, 'd', dBodies, (task) => closedLoop(dEvents.length, 64, task), MAX_RETRIES + 1);
    // The bare loop as earlier runs had it, retrying at once: no sender keeping the schedule
    // can match it (its ratio is bounded near 0.3 by the waits alone), kept for comparison.
    receiver.reset(failing);
    const dBareAtOnce = await bare(receiver, 'd at once', dBodies, (task) => closedLoop(dEvents.length, 64, task), MAX_RETRIES + 1, true);
    results.d = {
      platform: dPlatform,
      bare: dBare,
      ratio: ratio(dPlatform.deliveredPerS, dBare.deliveredPerS),
      bareAtOnce: dBareAtOnce,
      ratioAtOnce: ratio(dPlatform.deliveredPerS, dBareAtOnce.deliveredPerS),
      retryGaps: gaps,
      logMiB: stack.logSizeMiB(),
    };
    }
    // (f) the public endpoint of a trivial integration.
    if (only('f')) results.f = await publicEndpointScenario(stack, (token, method, route, body) => call(stack, token, method, route, body), Math.round(10_000 * SCALE));

    // (g) 100 tenants whose receivers hang and 100 whose receivers refuse, beside one that is served.
    if (only('g')) {
    const gCounts = { retries: 0 };
    const g = await noisyNeighbourScenario({
      receiver,
      tenant: (url) => tenant(stack, receiver, 1, url),
      ingest: (event) => ingest(stack, [event], gCounts),
      hangingTenants: Math.max(1, Math.round(100 * SCALE)),
      refusingTenants: Math.max(1, Math.round(100 * SCALE)),
      seconds: Math.max(10, Math.round(60 * SCALE)),
      metrics: () => fetch(`${stack.base}/metrics`).then((answer) => answer.text()),
    });
    results.g = { ...g, ingestRetries: gCounts.retries };
    }
    // (h) an organization's endless loops beside another's trivial endpoint.
    if (only('h')) results.h = await cpuNeighbourScenario(stack, (token, method, route, body) => call(stack, token, method, route, body), Math.max(15, Math.round(30 * SCALE)));
    // (j) an organization's logging loop beside another's trivial endpoint.
    if (only('j')) results.j = await logNeighbourScenario(stack, (token, method, route, body) => call(stack, token, method, route, body), Math.max(15, Math.round(30 * SCALE)));
    // (i) platform dev: a save until its installation runs it.
    if (only('i')) results.i = await devLoopScenario(stack, (token, method, route, body) => call(stack, token, method, route, body), Math.max(10, Math.round(30 * SCALE)));
    if (only('k')) results.k = await capacityScenario(stack, receiver, SCALE);
    if (only('l')) results.l = await leakScenario(stack, receiver, 30 * SCALE);
    if (only('o')) results.o = await operationsScenario(stack, receiver, Math.round(100_000 * SCALE));
    if (only('p')) results.p = await orderedScenario(stack, receiver, Math.max(200, Math.round(5000 * SCALE)));
    results.embeddedPeakRssMiB = stack.peakRss();
  } finally {
    await stack.stop();
  }

  // (m) svix-server beside ours, when a binary is given, and (q) lists on a large log: on a machine our stack has left.
  if (only('m') && process.env.BENCH_SVIX_SERVER) results.m = await svixScenario(process.env.BENCH_SVIX_SERVER, receiver, SCALE);
  else if (only('m')) process.stderr.write('bench: (m) skipped: BENCH_SVIX_SERVER (a svix-server binary) is not set\n');
  if (only('q')) results.q = await listScenario(receiver, SCALE);

  // (e) SIGKILL of the worker during a steady 1,000 events/s.
  if (only('e')) {
  process.stderr.write('bench: starting the production shape (API and worker apart)\n');
  stack = await startSplit();
  try {
    // Its worker, just started, answers a query (the registry's) before anything is asked of it.
    await call(stack, stack.adminToken, 'GET', '/v1/integrations');
    const e = await tenant(stack, receiver, 1);
    const eEvents = events(e, Math.round(20_000 * SCALE), 'e');
    receiver.reset();
    let killedAt = 0;
    const chaos = (async () => {
      // 6 s in, or a third of the way through a scaled-down run, so that the kill happens.
      await new Promise((resolve) => setTimeout(resolve, Math.min(6000, eEvents.length / 3)));
      killedAt = performance.now();
      process.stderr.write('  [e] SIGKILL the worker\n');
      stack.killWorker!();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      stack.startWorker!();
    })();
    const ePlatform = await throughPlatform(stack, receiver, 'e', eEvents, (task) => openLoop(1000, eEvents.length / 1000, task));
    await chaos;
    const backAfter = Math.min(...[...receiver.delivered().values()].filter((at) => at > killedAt + 1000)) - killedAt;
    receiver.reset();
    const eBare = await bare(receiver, 'e', bodiesOf(eEvents, e.installations[0]!), (task) => openLoop(1000, eEvents.length / 1000, task));
    results.e = { platform: { ...ePlatform, lost: eEvents.length - ePlatform.delivered, duplicatePercent: round((ePlatform.duplicates / eEvents.length) * 100, 2), deliveryBackAfterKillMs: round(backAfter) }, bare: eBare, ratio: ratio(ePlatform.deliveredPerS, eBare.deliveredPerS), peakRssMiB: stack.peakRss(), logMiB: stack.logSizeMiB() };
  } finally {
    await stack.stop();
  }
  }
  receiver.stop();
  ingestClient.close();
  const dir = path.join(__dirname, '..', '..', 'bench-results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `delivery-${String(results.date).replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(results, null, 2));
  process.stdout.write(`${report(results)}\nwritten to ${path.relative(process.cwd(), file)}\n`);
  // Done: (k)'s Temporal runtime and clients' pools would keep the process alive (and busy) after its report.
  process.exit(0);
}

function report(r: any): string {
  const line = (label: string, value: unknown) => `  ${label.padEnd(34)} ${typeof value === 'object' ? JSON.stringify(value) : value}`;
  /** Each scenario's lines, for those that ran (BENCH_ONLY). */
  const sections: Record<string, () => string[]> = {
    a: () => [
      '(a) 30,000 events, concurrency 64 (embedded default)',
      line('platform delivered/s', `${r.a.platform.deliveredPerS} (ingest ${r.a.platform.ingestPerS}/s)`),
      line('bare loop delivered/s', r.a.bare.deliveredPerS),
      line('ratio', `${r.a.ratio} (target >= 0.5)`),
      line('10 events a request delivered/s', `${r.a.batched.deliveredPerS}, ratio ${r.a.batchedRatio}, end-to-end p50 / p99 ${r.a.batched.endToEndMs.p50} / ${r.a.batched.endToEndMs.p99} ms, CPU s ${JSON.stringify(r.a.batched.cpuS)} (/v1/events/batch, 64 requests in flight)`),
      line('relay floor delivered/s', `${r.a.relay.deliveredPerS}, ratio ${r.a.relayRatio}, CPU s ${JSON.stringify(r.a.relay.cpuS)} (HTTP in, signed POST out, nothing recorded: bench/relay.ts)`),
      line('CPU ms an event at ratio 0.5', `platform and dev server at most ${r.a.cpuBudget.platformMayUseMsPerEvent} (all ${r.machine.cpus} cores busy, less the bench's ${r.a.cpuBudget.benchMsPerEvent}); they used ${r.a.cpuBudget.platformUsedMsPerEvent}, the relay ${r.a.cpuBudget.relayUsedMsPerEvent}`),
      line('end-to-end p50 / p99 ms', `${r.a.platform.endToEndMs.p50} / ${r.a.platform.endToEndMs.p99} (target p99 <= 1500; bare ${r.a.bare.endToEndMs.p50} / ${r.a.bare.endToEndMs.p99})`),
      line('peak RSS MiB', `${JSON.stringify(r.a.peakRssMiB)}, total ${r.a.totalRssMiB} (target <= 1024)`),
      line('delivery log on disk MiB', r.a.logMiB),
      line('CPU s per process', `${JSON.stringify(r.a.platform.cpuS)}, ${r.a.platform.coresBusy} of ${r.machine.cpus} cores busy`),
    ],
    b: () => [
      '(b) steady 100 events/s for 60 s',
      line('sent -> receiver p50 / p99 ms', `${r.b.platform.endToEndMs.p50} / ${r.b.platform.endToEndMs.p99} (targets 50 / 250; bare ${r.b.bare.endToEndMs.p50} / ${r.b.bare.endToEndMs.p99})`),
      line('202 p50 / p99 ms', `${r.b.platform.ackMs.p50} / ${r.b.platform.ackMs.p99} (target p99 <= 100)`),
    ],
    c: () => [
      '(c) one event to 50 installations, 1,000 times',
      line('platform deliveries/s', r.c.platform.deliveriesPerS),
      line('bare loop deliveries/s', r.c.bare.deliveredPerS),
      line('ratio', `${r.c.ratio} (target >= 0.5)`),
    ],
    d: () => [
      '(d) 10% of receiver answers are 500',
      line('platform delivered/s', r.d.platform.deliveredPerS),
      line('bare loop delivered/s', `${r.d.bare.deliveredPerS} (retries on the same schedule)`),
      line('ratio', `${r.d.ratio} (target >= 0.4)`),
      line('bare loop retrying at once', `${r.d.bareAtOnce.deliveredPerS}/s, ratio ${r.d.ratioAtOnce} (earlier runs' baseline)`),
      line('CPU s per process', `${JSON.stringify(r.d.platform.cpuS)}, ${r.d.platform.coresBusy} of ${r.machine.cpus} cores busy`),
      line('failed after every attempt', `${r.d.platform.failedAfterRetries} (0.1^4 of them expected)`),
      ...r.d.retryGaps.map((g: any) => line(`retry ${g.retry} gaps (${g.count})`, `min ${g.minMs}, p99 ${g.p99Ms} ms in ${g.rangeMs.join('-')}: ${g.belowRange} below, p99 ${g.p99OverRangeMs} ms over (target <= 250)`)),
    ],
    e: () => [
      '(e) worker SIGKILL during a steady 1,000 events/s (API and worker apart)',
      line('lost / duplicates', `${r.e.platform.lost} / ${r.e.platform.duplicates} (${r.e.platform.duplicatePercent}%, target <= 1%)`),
      line('delivery back after kill ms', `${r.e.platform.deliveryBackAfterKillMs} (target <= 15000)`),
      line('platform delivered/s', `${r.e.platform.deliveredPerS} (bare ${r.e.bare.deliveredPerS}, ratio ${r.e.ratio})`),
      line('peak RSS MiB', r.e.peakRssMiB),
    ],
    f: () => [
      '(f) an integration’s public endpoint, trivial handler, concurrency 32 (embedded default)',
      line('platform requests/s', `${r.f.platform.perS} (target >= 1000), p50 ${r.f.platform.p50Ms} ms, p99 ${r.f.platform.p99Ms} ms, failed ${r.f.platform.failed}`),
      line('bare Node handler requests/s', `${r.f.baseline.perS}, p50 ${r.f.baseline.p50Ms} ms (ratio ${r.f.ratio})`),
      line('warm per-call overhead p50 ms', `${r.f.warmOverheadP50Ms} (target <= 5)`),
      line('isolate cold start ms', `${r.f.coldStartMs.join(', ')} (target <= 250; after ${r.f.settleMs} ms for the platform to settle from (d))`),
      line('resident isolates MiB', r.f.isolateRssMiB.join(', ')),
    ],
    g: () => noisyNeighbourReport(r.g, line),
    h: () => [
      '(h) an organization whose code loops for ever (11 installations, 11 calls at a time) beside another’s trivial endpoint called 10 times a second (embedded default)',
      line('its p50 / p99 / max ms, alone', `${r.h.alone.p50Ms} / ${r.h.alone.p99Ms} / ${r.h.alone.maxMs} (${r.h.alone.calls} calls, ${r.h.alone.failed} failed)`),
      line('its p50 / p99 / max ms, beside', `${r.h.beside.p50Ms} / ${r.h.beside.p99Ms} / ${r.h.beside.maxMs} (${r.h.beside.calls} calls, ${r.h.beside.failed} failed; target p99 <= ${r.h.targetP99Ms}, failed 0)`),
      line('endless calls ended meanwhile', `${r.h.spinningCallsEnded} (each kills and replaces a process)`),
    ],
    j: () => [
      '(j) an organization whose code logs in a loop (4 installations, 20,000 lines a call, called back to back) beside another’s trivial endpoint called 10 times a second (embedded default)',
      line('its p50 / p99 / max ms, alone', `${r.j.alone.p50Ms} / ${r.j.alone.p99Ms} / ${r.j.alone.maxMs} (${r.j.alone.calls} calls, ${r.j.alone.failed} failed)`),
      line('its p50 / p99 / max ms, beside', `${r.j.beside.p50Ms} / ${r.j.beside.p99Ms} / ${r.j.beside.maxMs} (${r.j.beside.calls} calls, ${r.j.beside.failed} failed; target p99 <= ${r.j.targetP99Ms}, failed 0)`),
      line('lines written / one installation kept', `${r.j.linesWritten} in ${r.j.floods} calls / ${r.j.keptOfOneInstallationPage} (a page of at most 1,000; bounds: 1,000 held, 50/s, bursts of 500, newest 10,000)`),
    ],
    i: () => [
      `(i) platform dev: a save until its installation answers with it, ${r.i.saves} saves (embedded default)`,
      line('save -> running p50 / p99 / max ms', `${r.i.saveToRunningMs.p50} / ${r.i.saveToRunningMs.p99} / ${r.i.saveToRunningMs.max} (target p50 < 2000)`),
      line('platform check alone p50 ms', `${r.i.checkMs.p50} (baseline: the local build every reload repeats; ratio ${r.i.ratio})`),
    ],
  };
  sections.k = () => capacityReport(r.k, line);
  sections.l = () => leakReport(r.l, line);
  sections.o = () => operationsReport(r.o, line);
  sections.p = () => orderedReport(r.p, line);
  sections.q = () => listReport(r.q, line);
  sections.m = () => svixReport(r.m, { embeddedOne: r.k?.embedded.oneAtATime, embedded64: r.k?.embedded.inFlight64, topologyOne: r.k?.topology.oneAtATime, topology64: r.k?.topology.inFlight64 }, line);
  const ran = Object.keys(sections).filter((scenario) => r[scenario] !== undefined);
  const memory = line('embedded default RSS MiB at idle', `${JSON.stringify(r.embeddedIdleRssMiB)} once steady, ${JSON.stringify(r.embeddedStartedRssMiB)} just started (target: the service <= 200)`);
  const invalid = ran.filter((scenario) => r[scenario].platform?.invalidSignatures !== undefined).reduce((sum, scenario) => sum + r[scenario].platform.invalidSignatures, 0);
  return [memory, ...ran.flatMap((scenario) => sections[scenario]!()), line('invalid signatures', invalid)].join('\n');
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
