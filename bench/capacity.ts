import { closedLoop } from './load';
import type { BenchReceiver } from './receiver';
import { bare, bodiesOf, events, ratio, round, tenant, throughPlatform, BENCH_PROCESS, type Run } from './drive';
import { settled, steadyRss, type Stack } from './stack';
import { startTopology } from './topology-stack';
import { temporalFloor } from './temporal-floor';

/** CPU ms an event, by component, over a run (the bench's own driver and receiver left out). */
function cpuMsPerEvent(run: Run, n: number): Record<string, number> {
  const perEvent = Object.entries(run.cpuS).filter(([name]) => name !== BENCH_PROCESS).map(([name, seconds]) => [name, round((seconds * 1000) / n, 2)] as const);
  return { ...Object.fromEntries(perEvent), total: round(perEvent.reduce((sum, [, ms]) => sum + ms, 0), 2) };
}

const figures = (run: Run, n: number) => ({ deliveredPerS: run.deliveredPerS, endToEndMs: run.endToEndMs, ackMs: run.ackMs, duplicates: run.duplicates, cpuMsPerEvent: cpuMsPerEvent(run, n) });

/**
 * (k) Low load and capacity: 1,000 events one at a time on the embedded default (SQLite, dev
 * server) and on the production topology (a Temporal server with its services apart,
 * PostgreSQL, two APIs, two workers), beside the bare loop one at a time; then 20,000
 * events 64 in flight on each, the embedded one beside the bare loop too. CPU an event by component, and each process's RSS
 * at idle and after each load: what docs/capacity.md sizes a cluster from.
 */
export async function capacityScenario(embedded: Stack, receiver: BenchReceiver, scale: number) {
  const oneAtATime = Math.round(1000 * scale);
  const manyInFlight = Math.round(20_000 * scale);
  process.stderr.write('bench: Temporal alone, one signal at a time (its floor under ours)\n');
  const floor = await temporalFloor(Math.round(300 * Math.max(scale, 0.2)));
  const e = await tenant(embedded, receiver, 1);
  const eEvents = events(e, oneAtATime, 'k1');
  await settled(embedded);
  receiver.reset();
  const embeddedOne = await throughPlatform(embedded, receiver, 'k embedded, one at a time', eEvents, (task) => closedLoop(eEvents.length, 1, task));
  receiver.reset();
  const bareOne = await bare(receiver, 'k one at a time', bodiesOf(eEvents, e.installations[0]!), (task) => closedLoop(eEvents.length, 1, task));
  const eMany = events(e, manyInFlight, 'k4');
  receiver.reset();
  const embeddedMany = await throughPlatform(embedded, receiver, 'k embedded, 64 in flight', eMany, (task) => closedLoop(eMany.length, 64, task));
  receiver.reset();
  const bareMany = await bare(receiver, 'k 64 in flight', bodiesOf(eMany, e.installations[0]!), (task) => closedLoop(eMany.length, 64, task));

  process.stderr.write('bench: starting the production topology (Temporal server, PostgreSQL, two APIs, two workers)\n');
  const topology = await startTopology();
  try {
    const t = await tenant(topology, receiver, 1);
    // Steady: the tenant's set-up (workflows, the directory) and the start's young generation are not the idle figure.
    const idleRssMiB = await steadyRss(topology);
    const tOne = events(t, oneAtATime, 'k2');
    receiver.reset();
    const topologyOne = await throughPlatform(topology, receiver, 'k topology, one at a time', tOne, (task) => closedLoop(tOne.length, 1, task));
    const rssAfterOneMiB = topology.rss();
    const tMany = events(t, manyInFlight, 'k3');
    receiver.reset();
    const topologyMany = await throughPlatform(topology, receiver, 'k topology, 64 in flight', tMany, (task) => closedLoop(tMany.length, 64, task));
    return {
      temporalFloor: floor,
      embedded: { oneAtATime: figures(embeddedOne, oneAtATime), ratioToBare: ratio(embeddedOne.deliveredPerS, bareOne.deliveredPerS), inFlight64: figures(embeddedMany, manyInFlight), ratioToBare64: ratio(embeddedMany.deliveredPerS, bareMany.deliveredPerS), rssAfterMiB: embedded.rss() },
      bare: { oneAtATime: bareOne, inFlight64: bareMany },
      topology: {
        oneAtATime: figures(topologyOne, oneAtATime),
        inFlight64: figures(topologyMany, manyInFlight),
        idleRssMiB,
        rssAfterOneMiB,
        rssAfterLoadMiB: topology.rss(),
        peakRssMiB: topology.peakRss(),
      },
    };
  } finally {
    await topology.stop();
  }
}

/** (k)'s lines of the bench's report. */
export function capacityReport(k: Awaited<ReturnType<typeof capacityScenario>>, line: (label: string, value: unknown) => string): string[] {
  const run = (f: ReturnType<typeof figures>) => `${f.deliveredPerS}/s, event -> receiver p50 / p99 ${f.endToEndMs.p50} / ${f.endToEndMs.p99} ms, 202 p50 ${f.ackMs.p50} ms, CPU ${f.cpuMsPerEvent.total} ms an event`;
  return [
    '(k) low load and capacity: 1,000 events one at a time; 20,000 at 64 in flight on the production topology',
    line('Temporal alone (its floor), one signal at a time', `signal call p50 / p99 ${k.temporalFloor.signalMs.p50} / ${k.temporalFloor.signalMs.p99} ms (at most ${k.temporalFloor.oneAtATimePerSCeiling}/s one at a time), signal -> activity p50 / p99 ${k.temporalFloor.signalToActivityMs.p50} / ${k.temporalFloor.signalToActivityMs.p99} ms, dev server CPU ${k.temporalFloor.devServerCpuMsPerSignal} ms a signal`),
    line('embedded default, one at a time', `${run(k.embedded.oneAtATime)} (ratio to bare ${k.embedded.ratioToBare})`),
    line('bare loop, one at a time', `${k.bare.oneAtATime.deliveredPerS}/s, p50 / p99 ${k.bare.oneAtATime.endToEndMs.p50} / ${k.bare.oneAtATime.endToEndMs.p99} ms`),
    line('embedded default, 64 in flight', `${run(k.embedded.inFlight64)} (ratio to bare ${k.embedded.ratioToBare64})`),
    line('bare loop, 64 in flight', `${k.bare.inFlight64.deliveredPerS}/s, p50 / p99 ${k.bare.inFlight64.endToEndMs.p50} / ${k.bare.inFlight64.endToEndMs.p99} ms`),
    line('topology, one at a time', run(k.topology.oneAtATime)),
    line('topology, 64 in flight', run(k.topology.inFlight64)),
    line('CPU ms an event, embedded (1 at a time)', k.embedded.oneAtATime.cpuMsPerEvent),
    line('CPU ms an event, topology (1 at a time)', k.topology.oneAtATime.cpuMsPerEvent),
    line('CPU ms an event, topology (64)', k.topology.inFlight64.cpuMsPerEvent),
    line('RSS MiB, topology at idle', k.topology.idleRssMiB),
    line('RSS MiB, topology after 64 in flight', k.topology.rssAfterLoadMiB),
    line('RSS MiB, embedded after (k)', k.embedded.rssAfterMiB),
  ];
}
