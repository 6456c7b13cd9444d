/**
 * Delivery outcome rules and retry schedule of DESIGN.md §3. Pure and deterministic given
 * its inputs, so the delivery workflow runs it inside the Temporal sandbox.
 */

/** A first attempt, then at most this many retries. */
export const MAX_RETRIES = 3;
/** A Retry-After header may lengthen one wait up to this, never add attempts. */
export const MAX_RETRY_AFTER_MS = 60_000;
export const ATTEMPT_TIMEOUT_MS = 10_000;

/**
 * Error classes an attempt can end with when there is no HTTP status. `interrupted`: the
 * worker stopped (its drain time over) before the answer came, so whether the receiver got
 * the request is unknown; it is retried like a timeout.
 */
export type AttemptErrorClass = 'timeout' | 'connection_refused' | 'connection_reset' | 'dns_failure' | 'tls_failure' | 'network_error' | 'blocked_destination' | 'interrupted';

/** How a receiver fails every attempt it is sent: it hangs ('slow', each times out) or fails fast (refused, reset, 5xx, 429). */
export type FailingKind = 'slow' | 'fast';

/**
 * How long a receiver that answered keeps its lanes through fast failures (see
 * ShardState's `failing`; one that hangs is known only at its first timeout, and moves at
 * once): a shard run moves no installation to a shared lane by a batch failing fast
 * throughout within this long of the last answer it saw (or, before it has seen one, of a
 * hand-over saying it was prompt), and ingest hands over a receiver the log has had
 * failing fast for less than this as it stood before (see ReceiverStates.stateOf). So one
 * that stops answering moves at its first batch failing this long after its last answer
 * (later at a trickle of events). One that answers some events 500 (a handler choking on
 * some payloads, two 500s before a 200) is not down, and a shared lane's batches (retries
 * waiting up to 1.5 s for their time, hanging ones 10 s) would hold its next first
 * attempts for a slot: in bench (g), the tenant whose receiver answers 2 events a second
 * 500 twice went there whenever a batch held only those, and waited up to 1 s. Shard runs
 * replay with it: changing it takes a new patch.
 */
export const FAILING_AFTER_ANSWER_MS = 2000;

/** Whether a receiver's state (as written, or handed over) is failing, either way. */
export const isFailing = (state: unknown): state is FailingKind => state === 'slow' || state === 'fast';

/** An attempt's answer that says its receiver is failing: none (refused, reset, timed out), a 5xx, a 429. */
const receiverFailed = (answer: { statusCode?: number }): boolean => answer.statusCode === undefined || answer.statusCode >= 500 || answer.statusCode === 429;

/**
 * How receivers failed the attempts `answers` (all failed: how; one answered: null), per
 * installation. An interrupted attempt (its worker stopped or died) is the platform's
 * failure and says nothing of its receiver, unless `interruptedCounts` (shard runs from
 * before the patch `interrupted-not-failing` replay as they ran).
 */
export function failingOf(answers: { installationId: string; statusCode?: number; error?: string }[], interruptedCounts = false): Map<string, FailingKind | null> {
  const byInstallation = new Map<string, (typeof answers)[number][]>();
  for (const answer of answers) {
    if (answer.error === 'interrupted' && !interruptedCounts) continue;
    byInstallation.set(answer.installationId, [...(byInstallation.get(answer.installationId) ?? []), answer]);
  }
  return new Map([...byInstallation].map(([installationId, all]) => [installationId, all.every(receiverFailed) ? (all.every((answer) => answer.error === 'timeout') ? 'slow' : 'fast') : null]));
}

/**
 * A receiver that answered each attempt of a batch within this long of the attempt's time
 * is prompt: a batch of prompt receivers returns soon enough that a retry it schedules
 * still goes out on time (retries are started 1.5 s ahead).
 */
export const PROMPT_MS = 500;

/** Where a receiver stands after a batch: failing (how), prompt (see PROMPT_MS), or answering. */
export type ReceiverState = FailingKind | 'prompt' | null;

/**
 * Where a batch's attempts left each installation's receiver (see failingOf; `tookMs`: how
 * long after its time an attempt ended, unknown for one recorded by an earlier run).
 */
export function receiverStatesOf(answers: { installationId: string; statusCode?: number; error?: string; tookMs?: number }[], interruptedCounts = false): Map<string, ReceiverState> {
  const slow = new Set(answers.filter((answer) => answer.statusCode === undefined || (answer.tookMs ?? Infinity) > PROMPT_MS).map((answer) => answer.installationId));
  return new Map([...failingOf(answers, interruptedCounts)].map(([installationId, failing]) => [installationId, failing ?? (slow.has(installationId) ? null : 'prompt')]));
}

export interface AttemptResult {
  startedAt: string;
  durationMs: number;
  url: string;
  statusCode?: number;
  error?: AttemptErrorClass;
  errorMessage?: string;
  /** First 1 KiB of the response body. */
  responseBody?: string;
  /**
   * Interrupted (the worker stopping) before its request was handed to the network: the
   * receiver cannot have had it, so it is no attempt, and is made again elsewhere.
   */
  unsent?: true;
  /** From a Retry-After header on a 429 or 503, already capped. */
  retryAfterMs?: number;
}

export type Verdict = 'delivered' | 'retry' | 'failed';

export function verdict(result: Pick<AttemptResult, 'statusCode' | 'error'>): Verdict {
  if (result.error === 'blocked_destination') return 'failed';
  if (result.statusCode === undefined) return 'retry';
  if (result.statusCode >= 200 && result.statusCode < 300) return 'delivered';
  if (result.statusCode === 429 || result.statusCode >= 500) return 'retry';
  return 'failed';
}

/**
 * Wait before retry k (1-based): 2^(k-1) s x (1 + u/10), u uniform in [0, 1), so 1.0-1.1 s,
 * 2.0-2.2 s, 4.0-4.4 s; a longer Retry-After replaces it, up to 60 s.
 */
export function retryDelayMs(retry: number, u: number, retryAfterMs?: number): number {
  const jittered = Math.floor(1000 * 2 ** (retry - 1) * (1 + u / 10));
  if (retryAfterMs !== undefined && retryAfterMs > jittered) return Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return jittered;
}

/** Retry-After is either delta-seconds or an HTTP date. */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - nowMs;
  if (!Number.isFinite(ms) || ms <= 0) return undefined;
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}
