import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

export const PLATFORM_BIN = path.join(__dirname, '..', '..', '..', 'bin', 'platform.js');

/** Runs `platform` as a subprocess, as a user would; never throws, reports the exit code. */
export async function runCli(args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [PLATFORM_BIN, ...args], options);
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
