import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { childrenOf } from '../../src/system/procfs';
import { freePort } from '../../src/temporal/dev-server';
import { waitFor } from './platform';

/** The built tree (dist/): its entry points. */
export const DIST = path.join(__dirname, '..', '..');
/** A process's command name. */
export const comm = (pid: number) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim();

/** One request to a platform at `base`: status, JSON body, Retry-After and how long it took. */
export async function answer(base: string, method: string, route: string, token?: string, body?: unknown) {
  const started = Date.now();
  const response = await fetch(`${base}${route}`, { method, headers: { ...(token && { authorization: `Bearer ${token}` }), 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any, retryAfter: response.headers.get('retry-after'), ms: Date.now() - started };
}

export const healthy = (base: string, timeoutMs = 60_000) => waitFor(async () => ((await fetch(`${base}/healthz`).then((r) => r.status, () => 0)) === 200 ? true : undefined), timeoutMs, `${base} to be healthy`, 200);

type Embedded = { main: ChildProcess; wrapper?: ChildProcess; base: string; ports: { api: number; temporal: number; ui: number } };

/**
 * The embedded default (`node dist/src/main.js`) on a data directory of its own, and ports
 * chosen as it starts: ports kept from an earlier start are free between the two, for any
 * other test process's server to take. A port chosen here can be taken by another test
 * process before main.js binds it (main.js then refuses to start, naming it): the start is
 * tried again on other ports, three times at most.
 */
export async function embedded(dataDir: string, adminToken: string, options: { parent?: boolean; detached?: boolean } = {}): Promise<Embedded> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEmbedded(dataDir, adminToken, options);
    } catch (err) {
      if (attempt >= 3 || !/is taken by another process/.test((err as Error).message)) throw err;
    }
  }
}

async function startEmbedded(dataDir: string, adminToken: string, options: { parent?: boolean; detached?: boolean }): Promise<Embedded> {
  const ports = { api: await freePort(), temporal: await freePort(), ui: await freePort() };
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_CLI_PATH: process.env.TEMPORAL_CLI_RESOLVED,
    PLATFORM_DATA_DIR: dataDir,
    PORT: String(ports.api),
    PLATFORM_TEMPORAL_PORT: String(ports.temporal),
    PLATFORM_TEMPORAL_UI_PORT: String(ports.ui),
    PLATFORM_ADMIN_TOKEN: adminToken,
    PLATFORM_ALLOW_PRIVATE_TARGETS: 'true',
    LOG_LEVEL: 'error',
  };
  const base = `http://127.0.0.1:${ports.api}`;
  if (!options.parent) {
    const main = spawn(process.execPath, [path.join(DIST, 'src', 'main.js')], { env, stdio: ['ignore', 'ignore', 'pipe'], detached: options.detached });
    // What it said last, for a start that fails: it exiting ends the wait at once.
    let said = '';
    main.stderr!.on('data', (chunk: Buffer) => (said = (said + chunk.toString()).slice(-2000)));
    const exited = new Promise<never>((_, reject) => main.once('exit', (code, signal) => reject(new Error(`main.js exited (${code ?? signal}) before it was healthy`))));
    exited.catch(() => undefined); // its later kill by the test is no failure
    await Promise.race([healthy(base), exited]).catch((err: Error) => Promise.reject(new Error(`${err.message}; its stderr ended with: ${said || '(nothing)'}`)));
    return { main, base, ports };
  }
  // A parent in the place of `npm start`: it runs main.js as its child and does nothing else.
  const wrapper = spawn(process.execPath, ['-e', `require('node:child_process').spawn(process.execPath, [${JSON.stringify(path.join(DIST, 'src', 'main.js'))}], { stdio: 'inherit' }); setInterval(() => {}, 1e6);`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let said = '';
  wrapper.stderr!.on('data', (chunk: Buffer) => (said = (said + chunk.toString()).slice(-2000)));
  await healthy(base).catch((err: Error) => {
    wrapper.kill('SIGKILL'); // its main.js dies with it
    return Promise.reject(new Error(`${err.message}; main.js's stderr ended with: ${said || '(nothing)'}`));
  });
  const main = childrenOf(wrapper.pid!).map((pid) => ({ pid })).at(0)!;
  return { main: main as unknown as ChildProcess, wrapper, base, ports };
}
