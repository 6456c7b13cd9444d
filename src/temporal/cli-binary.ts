import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeDirectory } from '../make-directory';
import { tiedToParent } from '../lifecycle';

/** Newer tags carry a `replace` directive that `go install` refuses (DESIGN.md §2). */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

/** Per-user tool cache outside any checkout, so fresh clones and CI reuse one build. */
export function toolCacheDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'integration-platform', 'temporal-cli-v1.5.1');
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/**
 * Finds the Temporal CLI in DESIGN.md's order: TEMPORAL_CLI_PATH, PATH, the tool cache,
 * and otherwise builds it once with `go install` into the tool cache.
 */
export async function findOrBuildTemporalCli(
  env: NodeJS.ProcessEnv,
  say: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<string> {
  if (env.TEMPORAL_CLI_PATH) {
    if (!isExecutable(env.TEMPORAL_CLI_PATH)) throw new Error(`TEMPORAL_CLI_PATH=${env.TEMPORAL_CLI_PATH} is not an executable file`);
    return env.TEMPORAL_CLI_PATH;
  }
  const fromPath = onPath('temporal', env);
  if (fromPath) return fromPath;
  const cacheDir = toolCacheDir(env);
  const cached = path.join(cacheDir, 'temporal');
  if (isExecutable(cached)) return cached;

  const go = onPath('go', env);
  if (!go) {
    throw new Error(
      'No Temporal CLI found (TEMPORAL_CLI_PATH, PATH, tool cache) and Go is not installed to build it: ' +
        `install Go and run "go install ${TEMPORAL_CLI_MODULE}", or set TEMPORAL_CLI_PATH.`,
    );
  }
  makeDirectory(cacheDir, 'the tool cache (XDG_CACHE_HOME or HOME)');
  say(`Building the Temporal CLI (${TEMPORAL_CLI_MODULE}) into ${cacheDir}.`);
  say('This happens once per machine and takes several minutes; later runs reuse the build.');
  await goInstall(go, cacheDir, env, say);
  if (!isExecutable(cached)) throw new Error(`go install finished but ${cached} is missing`);
  say(`Temporal CLI ready: ${cached}`);
  return cached;
}

function goInstall(go: string, gobin: string, env: NodeJS.ProcessEnv, say: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    // Tied: a platform stopped during the build (Ctrl-C, SIGTERM) leaves no go behind.
    const child = spawn(...tiedToParent(go, ['install', TEMPORAL_CLI_MODULE]), {
      env: { ...env, GOBIN: gobin },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8192)));
    const progress = setInterval(() => say(`  still building the Temporal CLI (${Math.round((Date.now() - started) / 1000)} s)…`), 30_000);
    child.on('error', (err) => {
      clearInterval(progress);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(progress);
      if (code === 0) resolve();
      else reject(new Error(`go install ${TEMPORAL_CLI_MODULE} failed with exit code ${code}:\n${stderr}`));
    });
  });
}
