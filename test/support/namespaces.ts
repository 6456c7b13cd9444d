import { readdirSync } from 'node:fs';
import path from 'node:path';

/** Each test file runs in a namespace of its own, so nothing it starts meets another file's workers. */
export function namespaceFor(testFile: string): string {
  return `test-${path.basename(testFile).replace(/\.test\.[jt]s$/, '').replace(/[^A-Za-z0-9-]/g, '-')}`;
}

export function allTestNamespaces(testDir: string): string[] {
  return readdirSync(testDir)
    .filter((name) => /\.test\.js$/.test(name))
    .map((name) => namespaceFor(name));
}
