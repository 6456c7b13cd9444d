import type { ApiClient } from './api-client';
import { CliError } from './api-client';
import { show, type Output } from './format';
import type { Operation } from '../delivery-log/types';


interface HealthRow {
  consecutiveFailures: number;
  failingSince?: string;
  lastSuccessAt?: string;
  lastFailure?: { at: string; statusCode?: number; error?: string };
  last24h: { delivered: number; failed: number; pending: number; held: number; successRate: number | null };
  pause?: { reason: string; at: string; troubleSince?: string };
}

/** How often a followed operation is read. */
const FOLLOW_EVERY_MS = 500;
/** How long a followed operation may not be found yet. */
const BEGIN_WAIT_MS = 15_000;
const BAR_WIDTH = 30;

/** `[#########.....] 1,200 / 20,000` */
export function progressBar(operation: Pick<Operation, 'total' | 'done' | 'failed'>): string {
  const handled = operation.done + operation.failed;
  const share = operation.total ? Math.min(1, handled / operation.total) : 1;
  const filled = Math.round(share * BAR_WIDTH);
  return `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${handled.toLocaleString('en')} / ${operation.total.toLocaleString('en')}`;
}

const verb = (operation: Operation) => (operation.kind === 'replay_failed' ? 'replayed' : 'released');

function summary(operation: Operation): string {
  const failed = operation.failed ? `, ${operation.failed} gone from the log before their turn` : '';
  return `Operation ${operation.id} ${operation.status}: ${operation.done.toLocaleString('en')} ${verb(operation)}${failed}.`;
}

/** Reads the operation until it ends, a progress bar on `progress` (stderr) meanwhile; prints its end. */
export async function followOperation(api: ApiClient, output: Output, progress: (text: string) => void, id: string): Promise<void> {
  // A release is recorded once its workflow has begun, a moment after the resume answered: 404 until then.
  const begunBy = Date.now() + BEGIN_WAIT_MS;
  for (;;) {
    const operation = await api.request<Operation>('GET', `/v1/operations/${encodeURIComponent(id)}`).catch((err: unknown) => {
      if (err instanceof CliError && err.answer?.status === 404 && Date.now() < begunBy) return undefined;
      throw err;
    });
    if (!operation) {
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_EVERY_MS));
      continue;
    }
    if (operation.status !== 'running') {
      show(output, operation, () => summary(operation));
      // Its workflow ended without finishing it: a script sees it in the exit status.
      if (operation.status === 'failed') process.exitCode = 1;
      return;
    }
    if (!output.json) progress(progressBar(operation));
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_EVERY_MS));
  }
}

export async function showOperation(api: ApiClient, output: Output, id: string | undefined, cancel: boolean): Promise<void> {
  if (!id) throw new CliError('missing <operation id>', `platform operations ${cancel ? 'cancel' : 'show'} <operation id>`, 2);
  const operation = await api.request<Operation>(cancel ? 'POST' : 'GET', `/v1/operations/${encodeURIComponent(id)}${cancel ? '/cancel' : ''}`);
  show(output, operation, () => (cancel ? `Cancelling ${id}: it stops before its next page (${operation.done} ${verb(operation)} so far).` : `${summary(operation)}\n${progressBar(operation)}`));
}

export async function replayFailed(api: ApiClient, output: Output, progress: (text: string) => void, options: { installation?: string; since?: string; until?: string }): Promise<void> {
  if (!options.installation) throw new CliError('--installation is required', 'platform deliveries replay-failed --installation ins_... [--since <ISO time>]', 2);
  const started = await api.request<{ operation: string; count: number }>('POST', '/v1/deliveries/replay', { installation: options.installation, status: 'failed', since: options.since, until: options.until });
  if (!output.json) progress(`Replaying ${started.count.toLocaleString('en')} failed deliveries (one per event) in operation ${started.operation}; Ctrl-C stops following, not the replay.`);
  await followOperation(api, output, progress, started.operation);
}

export async function showHealth(api: ApiClient, output: Output, id: string | undefined): Promise<void> {
  if (!id) throw new CliError('missing <installation id>', 'platform installations health <installation id>', 2);
  const health = await api.request<HealthRow>('GET', `/v1/installations/${encodeURIComponent(id)}/health`);
  show(output, health, () => {
    const day = health.last24h;
    const failure = health.lastFailure && `${health.lastFailure.at} (${health.lastFailure.statusCode ?? health.lastFailure.error ?? 'failed'})`;
    return [
      health.pause ? `Paused: ${health.pause.reason} since ${health.pause.at}${health.pause.troubleSince ? ` (failing since ${health.pause.troubleSince})` : ''}` : 'Not paused',
      `Failed in a row: ${health.consecutiveFailures}${health.failingSince ? ` since ${health.failingSince}` : ''}`,
      `Last success: ${health.lastSuccessAt ?? 'none recorded'}`,
      `Last failure: ${failure ?? 'none recorded'}`,
      `Last 24 h: ${day.delivered} delivered, ${day.failed} failed, ${day.pending} pending, ${day.held} held; success rate ${day.successRate === null ? 'n/a' : `${(day.successRate * 100).toFixed(1)}%`}`,
    ].join('\n');
  });
}

export async function pauseOrResume(api: ApiClient, output: Output, progress: (text: string) => void, id: string | undefined, action: 'pause' | 'resume', resume: { held?: string; replayFailed: boolean }): Promise<void> {
  const { held, replayFailed } = resume;
  if (!id) throw new CliError('missing <installation id>', `platform installations ${action} <installation id>`, 2);
  if (held !== undefined && (action !== 'resume' || !['deliver', 'drop'].includes(held))) throw new CliError('--held is deliver or drop, with resume', 'platform installations resume <id> [--held deliver|drop] [--replay-failed]', 2);
  const answer = await api.request<{ id: string; status: string; operation?: string }>('POST', `/v1/installations/${encodeURIComponent(id)}/${action}`, action === 'resume' ? { ...(held && { held }), ...(replayFailed && { replayFailed }) } : undefined);
  if (!answer.operation) return show(output, answer, () => `${answer.id} is ${answer.status}`);
  if (!output.json) progress(`${answer.id} is ${answer.status}; what was held while paused is ${held === 'drop' ? 'dropped' : 'delivered in order of ingest'} by operation ${answer.operation}`);
  await followOperation(api, output, progress, answer.operation);
}

export async function portalLink(api: ApiClient, output: Output, id: string | undefined, expires: string | undefined): Promise<void> {
  const usage = 'platform installations portal-link <installation id> [--expires SECONDS]';
  if (!id) throw new CliError('missing <installation id>', usage, 2);
  if (expires !== undefined && !/^\d+$/.test(expires)) throw new CliError('--expires is a number of seconds', usage, 2);
  const link = await api.request<{ url: string; expiresAt: string }>('POST', `/v1/installations/${encodeURIComponent(id)}/portal-link`, expires === undefined ? {} : { expiresInSeconds: Number(expires) });
  show(output, link, () => `${link.url}\nworks until ${link.expiresAt}`);
}
