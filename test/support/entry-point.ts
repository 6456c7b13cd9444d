import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { waitFor } from './platform';

/**
 * The real entry point in one role (`node dist/src/main.js api|worker`), as an operator runs
 * it. `onLine` hears what it logs (stdout and stderr, line by line); otherwise that is discarded.
 */
export function entryPoint(role: 'api' | 'worker', env: NodeJS.ProcessEnv, onLine?: (line: string) => void): ChildProcess {
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'src', 'main.js'), role], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', onLine ? 'pipe' : 'ignore', onLine ? 'pipe' : 'ignore'] });
  for (const stream of onLine ? [child.stdout!, child.stderr!] : []) {
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop()!;
      lines.forEach(onLine!);
    });
  }
  return child;
}

/** Until `${base}${route}` answers 200. */
export function waitForOk(base: string, route: string, label: string, timeoutMs = 60_000): Promise<true> {
  return waitFor(async () => ((await fetch(`${base}${route}`).then((r) => r.ok, () => false)) ? true : undefined), timeoutMs, label, 100);
}

/** SIGTERM (a stop) or SIGKILL (a crash), answered once the process has exited. */
export async function ended(child: ChildProcess | undefined, signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}
