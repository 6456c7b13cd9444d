import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeDirectory } from '../make-directory';
import { tiedToParent } from '../lifecycle';

/** A Go program built from the module proxy into the per-user tool cache. */
export interface GoTool {
  /** What the messages call it ("the Temporal CLI"). */
  label: string;
  /** The tool cache's folder for this version ("temporal-cli-v1.5.1"). */
  cacheName: string;
  /** `go install` arguments, each `module/cmd/x@version`. */
  modules: readonly string[];
  /** The executables `go install` leaves in the folder. */
  binaries: readonly string[];
}

/** Per-user tool cache outside any checkout, so fresh clones and CI reuse one build. */
export function toolCacheDir(env: NodeJS.ProcessEnv, cacheName: string): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'integration-platform', cacheName);
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** The tool's folder in the cache, built there with `go install` the first time. */
export async function cachedOrBuilt(tool: GoTool, env: NodeJS.ProcessEnv, say: (line: string) => void): Promise<string> {
  const cacheDir = toolCacheDir(env, tool.cacheName);
  const complete = () => tool.binaries.every((name) => isExecutable(path.join(cacheDir, name)));
  if (complete()) return cacheDir;
  const go = onPath('go', env);
  if (!go) throw new Error(`${tool.label} is not in ${cacheDir} and Go is not installed to build it: install Go and run "GOBIN=${cacheDir} go install ${tool.modules.join(' ')}".`);
  makeDirectory(cacheDir, 'the tool cache (XDG_CACHE_HOME or HOME)');
  say(`Building ${tool.label} (${tool.modules.join(' ')}) into ${cacheDir}.`);
  say('This happens once per machine and takes several minutes; later runs reuse the build.');
  await goInstall(go, cacheDir, tool, env, say);
  if (!complete()) throw new Error(`go install finished but ${tool.binaries.map((name) => path.join(cacheDir, name)).join(', ')} are not all there`);
  say(`${tool.label} ready: ${cacheDir}`);
  return cacheDir;
}

function goInstall(go: string, gobin: string, tool: GoTool, env: NodeJS.ProcessEnv, say: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    // Tied: a platform stopped during the build (Ctrl-C, SIGTERM) leaves no go behind.
    const child = spawn(...tiedToParent(go, ['install', ...tool.modules]), {
      env: { ...env, GOBIN: gobin },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8192)));
    const progress = setInterval(() => say(`  still building ${tool.label} (${Math.round((Date.now() - started) / 1000)} s)…`), 30_000);
    child.on('error', (err) => {
      clearInterval(progress);
      reject(err);
    });
    child.on('exit', (code) => {
      clearInterval(progress);
      if (code === 0) resolve();
      else reject(new Error(`go install ${tool.modules.join(' ')} failed with exit code ${code}:\n${stderr}`));
    });
  });
}
