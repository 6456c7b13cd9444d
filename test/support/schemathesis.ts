import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/** Pinned: a new release may generate other cases from the same seed. */
export const SCHEMATHESIS_VERSION = '4.32.5';

/**
 * schemathesis in a virtual environment of its own, created on first use in the per-user
 * cache (beside the Temporal CLI) from PyPI, and reused by every later run.
 */
export async function schemathesis(): Promise<string> {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const venv = path.join(base, 'integration-platform', `schemathesis-${SCHEMATHESIS_VERSION}`);
  const st = path.join(venv, 'bin', 'st');
  if (existsSync(st)) return st;
  mkdirSync(path.dirname(venv), { recursive: true });
  await promisify(execFile)('python3', ['-m', 'venv', venv]);
  await promisify(execFile)(path.join(venv, 'bin', 'pip'), ['install', '--quiet', `schemathesis==${SCHEMATHESIS_VERSION}`], { maxBuffer: 64 * 1024 * 1024 });
  return st;
}
