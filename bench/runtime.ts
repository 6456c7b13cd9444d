import http from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { bundleScript } from '../src/cli/bundle';
import { childrenOf } from '../src/system/procfs';
import { closedLoop, percentile, progress } from './load';
import { settled, type Stack } from './stack';

const round = (value: number) => Math.round(value * 10) / 10;

/** Requests at `concurrency` to `url` over keep-alive; throughput and latency percentiles. */
async function hammer(label: string, url: string, requests: number, concurrency: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const latencies: number[] = [];
  let failed = 0;
  const stop = progress(label, () => `${latencies.length}/${requests}`);
  const started = performance.now();
  await closedLoop(requests, concurrency, async () => {
    const at = performance.now();
    const status = await new Promise<number>((resolve) => {
      const request = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('error', () => resolve(0));
      request.end('{"ping":true}');
    });
    if (status !== 200) failed += 1;
    latencies.push(performance.now() - at);
  });
  stop();
  agent.destroy();
  return { perS: round(requests / ((performance.now() - started) / 1000)), p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), failed };
}

/** RSS of each workerd process the platform started, in MiB. */
function isolateRssMiB(platformPid: number): number[] {
  return childrenOf(platformPid)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'workerd';
      } catch {
        return false;
      }
    })
    .map((pid) => Math.round(Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * 4096 / 2 ** 20));
}

/** How the bench calls the platform's API (as a client honouring Retry-After on GETs would). */
export type ApiCall = (token: string, method: string, route: string, body?: unknown) => Promise<any>;

/** An organization with a member, for the bench. */
export async function benchOrganization(stack: Stack, call: ApiCall, org: string): Promise<{ org: string; token: string }> {
  await call(stack.adminToken, 'POST', '/v1/orgs', { id: org, subdomain: org, title: 'Bench runtime' });
  return { org, token: (await call(stack.adminToken, 'POST', '/v1/users', { id: `${org}-user`, orgs: [org] })).token as string };
}

/** Publishes a public integration of `source` (TypeScript importing integration-platform/runtime) for the organization. */
export async function publishBenchIntegration(call: ApiCall, owner: { org: string; token: string }, name: string, source: string): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-runtime-'));
  mkdirSync(path.join(dir, 'src'));
  writeFileSync(path.join(dir, 'src', 'index.ts'), source);
  const manifest = [`name: ${name}`, `title: ${name}`, 'description: A bench integration.', `organization: ${owner.org}`, 'visibility: public', 'scopes: []', 'script: src/index.ts'].join('\n');
  await call(owner.token, 'POST', '/v1/integrations', { manifest, script: await bundleScript(path.join(dir, 'src', 'index.ts')) });
}

/** The public endpoint of an installation, on the stack's own address. */
export const endpointOf = (stack: Stack, installation: { urls: { publicEndpoint: string } }): string => installation.urls.publicEndpoint.replace(/^http:\/\/[^/]+/, stack.base);

/**
 * (f) The public endpoint of an integration whose fetch handler answers at once, beside a
 * bare Node handler answering the same: requests/s at concurrency 32, the warm per-call
 * overhead, the cold start of an isolate, and the memory of each resident isolate.
 */
export async function publicEndpointScenario(stack: Stack, call: ApiCall, requests: number) {
  const org = `bench-runtime-${process.pid}`;
  const owner = await benchOrganization(stack, call, org);
  await publishBenchIntegration(call, owner, 'bench-trivial', "import { createIntegration } from 'integration-platform/runtime';\nexport default createIntegration({ fetch: async () => Response.json({ received: true }) });\n");

  const coldStarts: number[] = [];
  const settling = progress('f', () => 'waiting for the platform to settle from the scenario before');
  const settleMs = await settled(stack).finally(settling);
  let endpoint = '';
  for (let i = 0; i < 5; i++) {
    // A new installation in a new organization is a new isolate: its first call is a cold start.
    const tenant = i === 0 ? owner : await benchOrganization(stack, call, `${org}-${i}`);
    const installation = await call(tenant.token, 'POST', '/v1/integrations/bench-trivial/installations', { target: { org: tenant.org } });
    const started = performance.now();
    const first = await fetch(endpointOf(stack, installation), { method: 'POST', body: '{}' });
    await first.arrayBuffer();
    coldStarts.push(performance.now() - started);
    endpoint ||= endpointOf(stack, installation);
  }
  const platform = await hammer('f', endpoint, requests, 32);

  const bare = http.createServer({ keepAlive: true }, (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}'));
  });
  await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
  const baseline = await hammer('f bare', `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`, requests, 32);
  bare.closeAllConnections();
  bare.close();
  const warm = await hammer('f warm', endpoint, 200, 1);
  const bareWarm = await (async () => {
    const server = http.createServer((req, res) => req.resume().on('end', () => res.end('{"received":true}')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const measured = await hammer('f bare warm', `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, 200, 1);
    server.close();
    return measured;
  })();
  return {
    platform,
    baseline,
    ratio: Math.round((platform.perS / baseline.perS) * 1000) / 1000,
    warmOverheadP50Ms: round(warm.p50Ms - bareWarm.p50Ms),
    coldStartMs: coldStarts.map(round),
    settleMs,
    isolateRssMiB: stack.platformPid ? isolateRssMiB(stack.platformPid) : [],
  };
}
