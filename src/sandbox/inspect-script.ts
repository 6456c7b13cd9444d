import { spawn } from 'node:child_process';

export type ScriptInspection = { ok: true; componentIds: string[] } | { ok: false; error: string };

const TIMEOUT_MS = 5000;

/**
 * Loads an integration bundle (CommonJS) to learn which components it registers, in a
 * child process under Node's permission model: no file system beyond its own entry, no
 * child processes or workers, an empty environment, a small heap and a deadline. It is
 * an inspection at publish time, not the runtime sandbox that runs integrations.
 */
export function inspectScript(bundle: string): Promise<ScriptInspection> {
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
