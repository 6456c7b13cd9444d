import http from 'node:http';
import { retryDelayMs } from '../src/webhooks/schedule';
import { signatureHeader } from '../src/webhooks/signature';

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
}

/** Deliveries a second between the first and the last of these arrival times (ms, any order). */
export function paceOf(arrivals: number[]): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  return (sorted.length - 1) / ((sorted.at(-1)! - sorted[0]!) / 1000);
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` at once. */
export async function closedLoop(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, async () => {
    while (next < n) await task(next++);
  }));
}

/** Starts `task(i)` at a steady `ratePerS` for `seconds`, whatever the answers take. */
export async function openLoop(ratePerS: number, seconds: number, task: (i: number) => Promise<void>): Promise<void> {
  const total = Math.round(ratePerS * seconds);
  const started = performance.now();
  const running: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / ratePerS;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    running.push(task(i));
  }
  await Promise.all(running);
}

/** A line a second on stderr while a scenario runs. */
export function progress(label: string, read: () => string): () => void {
  const started = performance.now();
  const timer = setInterval(() => process.stderr.write(`  [${label} ${((performance.now() - started) / 1000).toFixed(0)}s] ${read()}\n`), 1000);
  return () => clearInterval(timer);
}

/**
 * The platform process's event-loop delay while a scenario runs, read from its /metrics
 * every 2 s (prom-client resets its histogram at each read, so each sample is those 2 s):
 * `stop` answers the median of the samples' p99 and the largest delay seen, in ms.
 */
export function eventLoopDelay(metrics: () => Promise<string>): { stop(): { p99MedianMs?: number; maxMs?: number; samples: number } } {
  const p99s: number[] = [];
  const maxes: number[] = [];
  const read = (text: string, name: string) => Number(text.match(new RegExp(`^platform_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm'))?.[1]) * 1000;
  const timer = setInterval(() => {
    void metrics().then(
      (text) => {
        const [p99, max] = [read(text, 'p99'), read(text, 'max')];
        if (Number.isFinite(p99) && Number.isFinite(max)) (p99s.push(p99), maxes.push(max));
      },
      () => undefined,
    );
  }, 2000);
  void metrics().catch(() => undefined);
  return {
    stop() {
      clearInterval(timer);
      return { p99MedianMs: p99s.length ? Math.round(percentile(p99s, 50)) : undefined, maxMs: maxes.length ? Math.round(Math.max(...maxes)) : undefined, samples: p99s.length };
    },
  };
}

/** Until `done()` or the deadline, checking every 100 ms. */
export async function until(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  return done();
}

/** One request on a keep-alive connection: its status and whole body. */
export type Send = (url: string, method: string, headers: http.OutgoingHttpHeaders, body?: string) => Promise<{ status: number; text: string }>;

/**
 * Node's http with keep-alive: the client of both loops, the platform's and the bare one,
 * so that neither pays for a costlier client (fetch cost 320 µs of CPU a request here, this 85).
 */
export function httpClient(maxSockets: number): { send: Send; close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const send: Send = (url, method, headers, body) =>
    new Promise((resolve, reject) => {
      const request = http.request(url, { method, agent, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      });
      request.on('error', reject);
      request.end(body);
    });
  return { send, close: () => agent.destroy() };
}

/**
 * The bare loop: the same signed bodies POSTed straight to the same receiver, keep-alive,
 * signed at each POST, retried on a non-2xx until `maxAttempts`: after DESIGN.md's waits
 * (the platform's own schedule, on plain timers, not holding the caller's slot, as the
 * platform's 202 does not), or at once when `atOnce`, as no sender keeping the schedule may.
 */
export function barePoster(url: string, secret: () => string, concurrency: number) {
  const client = httpClient(concurrency);
  const retrying = new Set<Promise<void>>();
  const postOnce = async (body: string) => (await client.send(url, 'POST', { 'content-type': 'application/json', 'x-platform-signature': signatureHeader(body, [secret()], Math.floor(Date.now() / 1000)) }, body)).status;
  const retry = async (body: string, attempt: number, maxAttempts: number): Promise<void> => {
    await new Promise((resolve) => setTimeout(resolve, retryDelayMs(attempt - 1, Math.random())));
    if ((await postOnce(body)) >= 300 && attempt < maxAttempts) await retry(body, attempt + 1, maxAttempts);
  };
  return {
    /** The first attempt; what is retried on schedule goes on after it returns (see `settled`). */
    async post(body: string, maxAttempts = 1, atOnce = false): Promise<void> {
      if (atOnce) {
        for (let attempt = 1; attempt <= maxAttempts; attempt++) if ((await postOnce(body)) < 300) return;
        return;
      }
      if ((await postOnce(body)) < 300 || maxAttempts === 1) return;
      const retried = retry(body, 2, maxAttempts).finally(() => retrying.delete(retried));
      retrying.add(retried);
    },
    /** Once every retry on schedule is over. */
    async settled(): Promise<void> {
      while (retrying.size) await Promise.all(retrying);
    },
    close: client.close,
  };
}
