import { spawn } from 'node:child_process';

export type ScriptInspection = { ok: true; componentIds: string[] } | { ok: false; error: string };

const TIMEOUT_MS = 5000;
/** Inspections at once per process: each is a process of its own. */
const MAX_CONCURRENT = 2;
let running = 0;
const waiting: (() => void)[] = [];

async function slot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= MAX_CONCURRENT) await new Promise<void>((resolve) => waiting.push(resolve));
  running += 1;
  try {
    return await work();
  } finally {
    running -= 1;
    waiting.shift()?.();
  }
}

/**
 * Loads an integration bundle (CommonJS) to learn which components it registers: in a
 * fresh V8 context with no host object and no eval, inside a child process under Node's
 * permission model (no file system beyond its own entry, no child processes or workers),
 * with an empty environment, a small heap, a deadline, and at most two at once. It is an
 * inspection at publish time, not the runtime sandbox that runs integrations.
 */
export function inspectScript(bundle: string): Promise<ScriptInspection> {
  return slot(() => inspectOnce(bundle));
}

function inspectOnce(bundle: string): Promise<ScriptInspection> {
  const entry = require.resolve('./inspect-entry');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--experimental-permission', `--allow-fs-read=${entry}`, '--max-old-space-size=64', '--no-warnings', entry], {
      env: {},
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let output = '';
    const deadline = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', () => {
      clearTimeout(deadline);
      try {
        resolve(JSON.parse(output) as ScriptInspection);
      } catch {
        resolve({ ok: false, error: 'the script could not be loaded (it ran too long or used too much memory)' });
      }
    });
    // A child that dies early closes its stdin; the 'close' handler above reports that.
    child.stdin.on('error', () => undefined);
    child.stdin.end(bundle);
  });
}
