import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { findOrBuildTemporalCli } from '../src/temporal/cli-binary';
import { generateEncryptionKey } from '../src/temporal/codec';
import { freePort, startDevServer, type DevServer } from '../src/temporal/dev-server';
import { serializePayload, type SpaceContentUpdated } from '../src/webhooks/events';
import { signatureHeader, verifySignature } from '../src/webhooks/signature';

/**
 * `npm run bench`: N events through POST /v1/events with concurrency C into the API and
 * worker as separate processes, delivered to a local receiver that verifies every
 * signature; then, in the same run, the baseline: the same signed bodies posted straight to
 * the same receiver with the same concurrency.
 */
const EVENTS = Number(process.env.BENCH_EVENTS ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const DELIVERY_TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 15 * 60 * 1000);
const root = path.join(__dirname, '..', '..');

interface Receiver {
  url: string;
  arrivals: Map<string, number>;
  invalid: number;
  close(): void;
}

async function startReceiver(secret: () => string): Promise<Receiver> {
  const receiver = { arrivals: new Map<string, number>(), invalid: 0 } as Receiver;
  const server = http.createServer({ keepAlive: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (!verifySignature(req.headers['x-platform-signature'] as string | undefined, body, secret()).valid) {
        receiver.invalid += 1;
        res.writeHead(401).end('{"error":"bad signature"}');
        return;
      }
      const { eventId } = JSON.parse(body.toString()) as { eventId: string };
      if (!receiver.arrivals.has(eventId)) receiver.arrivals.set(eventId, performance.now());
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = () => {
    server.closeAllConnections();
    server.close();
  };
  return receiver;
}

function node(script: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, [...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []), path.join(root, 'dist', script)], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  return child;
}

/** Peak resident set of a process (Linux VmHWM), in MiB. */
function peakRssMiB(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

async function api<T = any>(base: string, token: string, method: string, route: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base}${route}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

async function waitHealthy(base: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`${base}/healthz`).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('API never became healthy');
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` at once. */
async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, async () => {
    while (next < n) await task(next++);
  }));
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10 : NaN;
}

function summarize(starts: Map<string, number>, arrivals: Map<string, number>, firstStart: number) {
  const latencies = [...starts].filter(([id]) => arrivals.has(id)).map(([id, start]) => arrivals.get(id)! - start).sort((a, b) => a - b);
  const lastArrival = Math.max(...arrivals.values());
  return {
    delivered: arrivals.size,
    deliveryRatePerS: Math.round((arrivals.size / ((lastArrival - firstStart) / 1000)) * 10) / 10,
    latencyMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95), p99: percentile(latencies, 99) },
  };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'platform-bench-'));
  const encryptionKey = generateEncryptionKey();
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  let devServer: DevServer | undefined;
  if (!process.env.TEMPORAL_ADDRESS) {
    devServer = await startDevServer({ cliPath: await findOrBuildTemporalCli(), namespace: 'default', dbFile: path.join(dataDir, 'temporal.db') });
  }
  const address = process.env.TEMPORAL_ADDRESS ?? devServer!.address;
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { PLATFORM_DATABASE_URL: `sqlite:${path.join(dataDir, 'delivery-log.db')}`, TEMPORAL_ADDRESS: address, PLATFORM_ENCRYPTION_KEY: encryptionKey, PLATFORM_ADMIN_TOKEN: adminToken, PORT: String(port), PLATFORM_BASE_URL: base, PLATFORM_ALLOW_PRIVATE_TARGETS: 'true', LOG_LEVEL: 'warn', PLATFORM_TASK_QUEUE: `bench-${randomBytes(3).toString('hex')}` };
  const embedded = process.env.BENCH_MODE === 'embedded';
  const worker = embedded ? node('src/main.js', { ...env, TEMPORAL_ADDRESS: '', PLATFORM_DATA_DIR: dataDir, PLATFORM_TEMPORAL_PORT: String(await freePort()), PLATFORM_TEMPORAL_UI_PORT: String(await freePort()) }) : node('src/worker.js', env);
  const apiProcess = embedded ? worker : node('src/api/main.js', env);
  let secret = '';
  const receiver = await startReceiver(() => secret);
  try {
    await waitHealthy(base);
    const org = `bench-${randomBytes(3).toString('hex')}`;
    await api(base, adminToken, 'POST', '/v1/orgs', { id: org, subdomain: org, title: 'Bench' });
    const { token } = await api(base, adminToken, 'POST', '/v1/users', { id: `${org}-user`, orgs: [org] });
    const installation = await api(base, token, 'POST', '/v1/integrations/webhook/installations', { target: { org, space: 'bench-space' }, configuration: { webhook_url: receiver.url, space_content_updated: true } });
    secret = (await api(base, token, 'GET', `/v1/installations/${installation.id}/signing-secret`)).secret;
    const events: SpaceContentUpdated[] = Array.from({ length: EVENTS }, (_, i) => ({ type: 'space_content_updated', organizationId: org, spaceId: 'bench-space', revisionId: `rev-${i}`, eventId: `evt_bench_${org}_${i}` }));

    process.stderr.write(`bench: ${EVENTS} events, concurrency ${CONCURRENCY}, Temporal at ${address}\n`);
    const starts = new Map<string, number>();
    const first = performance.now();
    await pool(EVENTS, CONCURRENCY, async (i) => {
      const event = events[i]!;
      starts.set(event.eventId!, performance.now());
      await api(base, adminToken, 'POST', '/v1/events', event);
    });
    const ingestMs = performance.now() - first;
    const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
    while (receiver.arrivals.size < EVENTS && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    const platform = { ingestRatePerS: Math.round((EVENTS / (ingestMs / 1000)) * 10) / 10, ...summarize(starts, receiver.arrivals, first) };
    const rss = { apiMiB: peakRssMiB(apiProcess.pid), workerMiB: peakRssMiB(worker.pid), temporalDevServerMiB: peakRssMiB(devServer?.pid) };

    // Baseline: the same signed bodies, straight to the same receiver, same concurrency.
    const baselineArrivals = new Map<string, number>();
    receiver.arrivals = baselineArrivals;
    const baseStarts = new Map<string, number>();
    const bodies = events.map((event) => serializePayload(event, `${event.eventId}-baseline`, installation.id));
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const baseFirst = performance.now();
    await pool(EVENTS, CONCURRENCY, async (i) => {
      const body = bodies[i]!;
      baseStarts.set(`${events[i]!.eventId}-baseline`, performance.now());
      await new Promise<void>((resolve, reject) => {
        const request = http.request(receiver.url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'x-platform-signature': signatureHeader(body, [secret], Math.floor(Date.now() / 1000)) } }, (response) => {
          response.resume();
          response.on('end', resolve);
        });
        request.on('error', reject);
        request.end(body);
      });
    });
    const baseline = summarize(baseStarts, baselineArrivals, baseFirst);
    agent.destroy();

    const result = {
      date: new Date().toISOString(),
      events: EVENTS,
      concurrency: CONCURRENCY,
      machine: { cpus: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30) },
      platform,
      invalidSignatures: receiver.invalid,
      peakRss: rss,
      baseline,
      ratio: {
        deliveryRate: Math.round((platform.deliveryRatePerS / baseline.deliveryRatePerS) * 10000) / 10000,
        latencyP50: Math.round((platform.latencyMs.p50 / baseline.latencyMs.p50) * 10) / 10,
      },
    };
    mkdirSync(path.join(root, 'bench-results'), { recursive: true });
    const file = path.join(root, 'bench-results', `webhooks-${result.date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(result, null, 2));
    process.stdout.write(
      [
        `events ${EVENTS}, concurrency ${CONCURRENCY}`,
        `platform: ingest ${platform.ingestRatePerS}/s, delivered ${platform.delivered}/${EVENTS} at ${platform.deliveryRatePerS}/s, end-to-end p50 ${platform.latencyMs.p50} ms, p95 ${platform.latencyMs.p95} ms, p99 ${platform.latencyMs.p99} ms`,
        `baseline: ${baseline.deliveryRatePerS}/s, p50 ${baseline.latencyMs.p50} ms, p95 ${baseline.latencyMs.p95} ms, p99 ${baseline.latencyMs.p99} ms`,
        `ratio: delivery rate ${result.ratio.deliveryRate} of baseline, p50 latency ${result.ratio.latencyP50}x baseline`,
        `peak RSS: api ${rss.apiMiB} MiB, worker ${rss.workerMiB} MiB, temporal dev server ${rss.temporalDevServerMiB ?? 'external'} MiB`,
        `invalid signatures at the receiver: ${receiver.invalid}`,
        `written to ${path.relative(process.cwd(), file)}`,
      ].join('\n') + '\n',
    );
  } finally {
    receiver.close();
    worker.kill('SIGTERM');
    apiProcess.kill('SIGTERM');
    await devServer?.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
