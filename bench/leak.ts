import { openLoop } from './load';
import type { BenchReceiver } from './receiver';
import { events, tenant, throughPlatform } from './drive';
import type { Stack } from './stack';

const RATE = 100;
const SAMPLE_EVERY_MS = 5 * 60_000;

/**
 * (l) A leak check: a steady 100 events/s for `minutes` (30 at scale 1) on the embedded
 * default, each process's RSS sampled every 5 minutes. Growth is read from the first
 * sample under load (warm: caches, pools and the JIT have filled) to the last.
 */
export async function leakScenario(stack: Stack, receiver: BenchReceiver, minutes: number) {
  const t = await tenant(stack, receiver, 1);
  const list = events(t, Math.round(minutes * 60 * RATE), 'l');
  const started = performance.now();
  const samples: { minute: number; rssMiB: Record<string, number | undefined> }[] = [{ minute: 0, rssMiB: stack.rss() }];
  const sampler = setInterval(() => {
    samples.push({ minute: Math.round((performance.now() - started) / 60_000), rssMiB: stack.rss() });
    process.stderr.write(`  [l] ${JSON.stringify(samples.at(-1))}\n`);
  }, Math.min(SAMPLE_EVERY_MS, (minutes * 60_000) / 3));
  receiver.reset();
  const run = await throughPlatform(stack, receiver, 'l', list, (task) => openLoop(RATE, list.length / RATE, task)).finally(() => clearInterval(sampler));
  samples.push({ minute: Math.round((performance.now() - started) / 60_000), rssMiB: stack.rss() });
  const [warm, last] = [samples[1] ?? samples[0]!, samples.at(-1)!];
  const growthMiB = Object.fromEntries(Object.keys(last.rssMiB).map((name) => [name, (last.rssMiB[name] ?? 0) - (warm.rssMiB[name] ?? 0)]));
  return { minutes, events: list.length, delivered: run.delivered, endToEndMs: run.endToEndMs, samples, growthMiB, fromMinute: warm.minute };
}

/** (l)'s lines of the bench's report. */
export function leakReport(l: Awaited<ReturnType<typeof leakScenario>>, line: (label: string, value: unknown) => string): string[] {
  return [
    `(l) leak check: a steady ${RATE} events/s for ${l.minutes} minutes (embedded default)`,
    ...l.samples.map((sample) => line(`RSS MiB at minute ${sample.minute}`, sample.rssMiB)),
    line(`growth MiB, minute ${l.fromMinute} to the end`, `${JSON.stringify(l.growthMiB)} (target: none beyond noise)`),
    line('delivered / sent', `${l.delivered} / ${l.events}, event -> receiver p50 / p99 ${l.endToEndMs.p50} / ${l.endToEndMs.p99} ms`),
  ];
}
