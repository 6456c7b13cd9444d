import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * Creates a directory and its missing parents, or throws naming the setting it came from.
 * Node's own recursive mkdirSync spins for ever where the kernel answers ENOENT for a parent
 * that exists (`/proc/sys/nope`): a mistyped PLATFORM_DATA_DIR hung the start at 100% CPU.
 */
export function makeDirectory(dir: string, setting: string): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); !existsSync(at); at = path.dirname(at)) {
    missing.unshift(at);
    if (path.dirname(at) === at) break;
  }
  for (const at of missing) {
    try {
      mkdirSync(at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw new Error(`${setting}: cannot create ${at} (${code ?? (err as Error).message})`);
    }
  }
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch (err) {
    throw new Error(`${setting}: cannot use ${path.resolve(dir)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!isDirectory) throw new Error(`${setting}: ${path.resolve(dir)} is not a directory`);
}
