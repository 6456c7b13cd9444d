import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { percentile, progress } from './load';
import { benchOrganization, endpointOf, type ApiCall } from './runtime';
import type { Stack } from './stack';

const PLATFORM_BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');
const sourceOf = (n: number) => `import { createIntegration } from 'integration-platform/runtime';\nexport default createIntegration({ fetch: async () => Response.json({ saved: ${n} }) });\n`;

/** Runs the CLI; resolves with its stderr once it exits (0 expected). */
function cli(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PLATFORM_BIN, ...args], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(err) : reject(new Error(`platform ${args.join(' ')} exited ${code}: ${err}`))));
  });
}

/**
 * (i) `platform dev`'s loop: a save of the integration's source, then calls of its
 * installation's endpoint every 20 ms until it answers what was saved; `saves` times. The
 * baseline, measured in the same run: `platform check` of the same folder (the local
 * build and check every reload repeats), as a whole command.
 */
export async function devLoopScenario(stack: Stack, call: ApiCall, saves: number) {
  const owner = await benchOrganization(stack, call, `bench-dev-${process.pid}`);
  const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-dev-')), 'bench-dev');
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  writeFileSync(path.join(dir, 'platform-manifest.yaml'), ['name: bench-dev', 'title: Bench dev', 'description: The dev loop bench.', `organization: ${owner.org}`, 'visibility: private', 'scopes: []', 'script: src/index.ts'].join('\n'));
  writeFileSync(path.join(dir, 'src', 'index.ts'), sourceOf(0));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: stack.base, PLATFORM_TOKEN: owner.token };
  await cli(['publish'], dir, env);
  const endpoint = endpointOf(stack, await call(owner.token, 'POST', '/v1/integrations/bench-dev/installations', { target: { org: owner.org } }));

  const checks: number[] = [];
  for (let i = 0; i < Math.min(saves, 10); i++) {
    const at = performance.now();
    await cli(['check'], dir, env);
    checks.push(performance.now() - at);
  }

  const dev = spawn(process.execPath, [PLATFORM_BIN, 'dev', '--all'], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let said = '';
  dev.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => dev.once('exit', (code) => resolve(code)));
  const reloads: number[] = [];
  try {
    while (!/runs on /.test(said)) {
      if (dev.exitCode !== null) throw new Error(`platform dev exited: ${said}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const stop = progress('i', () => `${reloads.length}/${saves} saves running`);
    for (let n = 1; n <= saves; n++) {
      const at = performance.now();
      writeFileSync(path.join(dir, 'src', 'index.ts'), sourceOf(n));
      for (;;) {
        const answer = await fetch(endpoint).then((response) => response.json() as Promise<{ saved?: number }>, () => ({}) as { saved?: number });
        if (answer.saved === n) break;
        if (performance.now() - at > 60_000) throw new Error(`save ${n} not running after 60 s: ${said.slice(-500)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      reloads.push(performance.now() - at);
      // The next save once this one's reload has settled, as an author's next edit comes.
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    stop();
  } finally {
    dev.kill('SIGINT');
    await exited;
  }
  const round = (value: number) => Math.round(value);
  return {
    saves: reloads.length,
    saveToRunningMs: { p50: round(percentile(reloads, 50)), p99: round(percentile(reloads, 99)), max: round(Math.max(...reloads)) },
    checkMs: { p50: round(percentile(checks, 50)) },
    ratio: Math.round((percentile(reloads, 50) / percentile(checks, 50)) * 100) / 100,
  };
}
