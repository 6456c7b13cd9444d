import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * A Python package from PyPI in a virtual environment of its own, created on first use in
 * the per-user cache (beside the Temporal CLI) and reused by every later run: answers the
 * environment's directory. Installed once pip has finished (a marker file says so), so a
 * run stopped half-way installs again.
 */
export async function pythonVenv(pkg: string, version: string): Promise<string> {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const venv = path.join(base, 'integration-platform', `${pkg}-${version}`);
  const installed = path.join(venv, '.installed');
  if (existsSync(installed)) return venv;
  mkdirSync(path.dirname(venv), { recursive: true });
  await promisify(execFile)('python3', ['-m', 'venv', venv]);
  await promisify(execFile)(path.join(venv, 'bin', 'pip'), ['install', '--quiet', `${pkg}==${version}`], { maxBuffer: 64 * 1024 * 1024 });
  writeFileSync(installed, '');
  return venv;
}
