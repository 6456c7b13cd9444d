import { watch } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ApiClient, CliError } from './api-client';
import { checkIntegration, upload, type Terminal } from './authoring';
import type { Output } from './format';
import { showLogs } from './logs';

export interface DevOptions {
  /** Installations to run the development versions (of the caller's own organization). */
  installations: string[];
  /** Every installation of the integration in its owning organization instead. */
  all: boolean;
  manifestEnv?: string;
  /** Ctrl-C: the installations go back to the latest published version. */
  stopped: AbortSignal;
}

/** Changes within this long of each other make one build. */
const SETTLE_MS = 50;
/** What changes under these is not the integration's source. */
const IGNORED = /(^|[\\/])(node_modules|\.git|dist)([\\/]|$)/;

/**
 * `platform dev`: builds and uploads the folder as a development version, pins the chosen
 * installations to it, then does so again on every change of its files, printing how
 * long each took, while their log streams here. On Ctrl-C they go back where they were:
 * the version a member had pinned, or the latest published one.
 */
export async function runDev(terminal: Terminal, api: ApiClient, output: Output, env: NodeJS.ProcessEnv, dirArg: string | undefined, options: DevOptions): Promise<void> {
  const dir = path.resolve(dirArg ?? '.');
  const first = await checkIntegration(terminal, dir, options.manifestEnv);
  const name = first.manifest.name;
  const ids = options.all ? await ownInstallations(api, name) : options.installations;
  if (ids.length === 0) throw new CliError(options.all ? `${name} has no installation in its organization` : 'no installation chosen', 'platform dev --installation ins_... [--installation ins_...], or --all', 2);

  // Where each was, to put it back on Ctrl-C: a member's pin stays a pin.
  const before = await Promise.all(ids.map((id) => api.request<{ version?: number; pinned?: boolean }>('GET', `/v1/installations/${encodeURIComponent(id)}`)));

  /** Uploads what the folder holds now and moves the installations to it; answers its version. */
  const reload = async (checked = first) => {
    const { version } = await upload(api, env, checked, true);
    await Promise.all(ids.map((id) => api.request('POST', `/v1/installations/${encodeURIComponent(id)}/pin`, { version })));
    return version;
  };
  const started = performance.now();
  const version = await reload();
  terminal.progress(`${name}: development version ${version} runs on ${ids.join(', ')} (${Math.round(performance.now() - started)} ms). Watching ${dir}; Ctrl-C to stop.`);

  let timer: NodeJS.Timeout | undefined;
  let changedAt: number | undefined;
  let building: Promise<void> | undefined;
  const build = async () => {
    const since = changedAt!;
    changedAt = undefined;
    try {
      const checked = await checkIntegration({ ...terminal, progress: () => undefined }, dir, options.manifestEnv);
      const reloaded = await reload(checked);
      terminal.progress(`${name}: development version ${reloaded} runs, ${Math.round(performance.now() - since)} ms after the change`);
    } catch (err) {
      // A save with an error in it is the author's to fix; the last good version keeps running.
      terminal.progress(`${name}: not reloaded: ${(err as Error).message}`);
    }
    building = undefined;
    if (changedAt !== undefined) schedule();
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (!building && !options.stopped.aborted) building = build();
    }, SETTLE_MS);
  };
  const watcher = watch(dir, { recursive: true }, (_event, file) => {
    if (file && IGNORED.test(file)) return;
    changedAt ??= performance.now();
    schedule();
  });
  try {
    await showLogs(api, output, name, { installation: ids.length === 1 ? ids[0] : undefined, installations: ids, follow: true, stopped: options.stopped, limit: '20' });
  } finally {
    watcher.close();
    clearTimeout(timer);
    await building;
    // Back where each was: the version a member pinned it to, or the latest, moved by publishes again.
    const back = await Promise.allSettled(
      ids.map((id, i) => {
        const { pinned, version } = before[i]!;
        const path = `/v1/installations/${encodeURIComponent(id)}/${pinned ? 'pin' : 'unpin'}`;
        return api.request('POST', path, pinned ? { version } : undefined);
      }),
    );
    const failed = ids.filter((_, i) => back[i]!.status === 'rejected');
    terminal.progress(failed.length ? `${name}: ${failed.join(', ')} not returned where they were: platform unpin <installation>, or platform pin <installation> <version>` : `${name}: ${ids.join(', ')} back where they were`);
  }
}

/** The integration's installations in its owning organization (where development versions may run). */
async function ownInstallations(api: ApiClient, name: string): Promise<string[]> {
  const { ownerOrg } = await api.request<{ ownerOrg: string }>('GET', `/v1/integrations/${encodeURIComponent(name)}`);
  const { items } = await api.request<{ items: { id: string; target: { org: string } }[] }>('GET', `/v1/installations?integration=${encodeURIComponent(name)}&org=${encodeURIComponent(ownerOrg)}`);
  return items.filter((installation) => installation.target.org === ownerOrg).map((installation) => installation.id);
}
