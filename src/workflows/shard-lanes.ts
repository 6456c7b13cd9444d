import type { FailingKind } from './shard-contract';

/**
 * A shard run's lanes: which lane a delivery waits in, and how many batches each may have
 * in flight, under the rules the run's history recorded (see ShardState).
 */

/** Deliveries per attempt batch (one activity). */
export const BATCH = 100;
/**
 * Batches in flight per first-attempt lane. A lane with one in flight starts another only
 * when it has a full batch: one busy installation is not held to one batch per round
 * trip, and a receiver that hangs holds a few slots, not the shard.
 */
const LANE_BATCHES = 4;
/**
 * Batches in flight per retry lane, partial ones included: with the lead, several overlap
 * while they wait for their time (a receiver that hangs: one partial one, once a batch of it timed out throughout).
 */
const RETRY_LANE_BATCHES = 8;
/**
 * Batches in flight per shared lane of failing receivers (see ShardState's `failing`),
 * partial ones included: a slow one's batches hold their slots for the attempt timeout.
 * Four, not sixteen: beside 200 failing receivers a healthy tenant's p99 was 5.7 s, not
 * 8.6 s, on 2 cores (docs/decisions/deliveries.md); their retries wait for a slot instead.
 */
export const SHARED_LANE_BATCHES = 4;
/** Those of runs started before the cap was lowered. */
export const SHARED_LANE_BATCHES_BEFORE_CAP = 16;
/**
 * The lane of prompt receivers' first attempts, and its batches in flight: full ones up to
 * 16 (a busy installation's pace), partial ones up to 4 side by side (a quiet one's events
 * wait for no other batch; what comes meanwhile fills the next, as a group commit's does).
 */
export const PROMPT_LANE = '~prompt';
const PROMPT_LANE_BATCHES = 16;
const PROMPT_LANE_PARTIAL_BATCHES = 4;

/**
 * How a run behaves, as the patches its history recorded decide (see deliveryShardWorkflow):
 * a run started before a change replays as it ran.
 */
export interface ShardRules {
  /** First attempts and retries batched apart, in lanes; batches in flight capped (`batch-lanes`). */
  lanes: boolean;
  /** A lane may have more than one batch in flight (`lane-pipeline`). */
  pipelined: boolean;
  /** Retries start `lead` ms before they are due, grouped within `group` ms (`retry-lead`). */
  led: boolean;
  lead: number;
  group: number;
  /** What is carried over is bounded by its size, not its count alone (`carry-bytes`). */
  bytesBounded: boolean;
  /** Retry lanes whose receivers hang start partial batches one at a time (`hanging-lane-partial-batches`). */
  holdsHanging: boolean;
  /** Installations whose receivers fail everything share two lanes (`failing-shared-lanes`). */
  sharesFailing: boolean;
  /** Hand-overs' `failing` put installations in those lanes from their first attempt (`failing-hints`). */
  hinted: boolean;
  /** An interrupted attempt (the worker stopping or dying) says nothing of its receiver (`interrupted-not-failing`). */
  interruptionsFree: boolean;
  /** Batches in flight per shared lane (`shared-lane-batches-4`). */
  sharedLaneBatches: number;
  /** Prompt receivers' first attempts share a lane (`prompt-first-attempts`). */
  sharesPrompt: boolean;
  /** Hand-overs' `prompt` put installations in it from their first attempt (`prompt-hints`). */
  promptHinted: boolean;
  /** What an installation has queued follows it into a shared lane when it is found failing, by a batch or a hint (`queued-follow-lane`). */
  queuedFollow: boolean;
  /** A batch failing fast throughout within FAILING_AFTER_ANSWER_MS of an answer moves its installation nowhere; the prompt lane's queue follows it too (`failing-after-answer`). */
  failingAfterAnswer: boolean;
}

export const isRetryLane = (lane: string): boolean => lane.endsWith('/retry');
/** The shared lanes of failing receivers (no installation id starts with `~`); their batches go to the retry queue. */
export const sharedLane = (kind: FailingKind): string => `~${kind}/retry`;
export const isSharedLane = (lane: string): boolean => lane.startsWith('~');

/** Whether a lane with `inFlight` batches (and `ready` deliveries waiting) may start another beside them. */
export function mayAddBatch(lane: string, inFlight: number, ready: number, rules: ShardRules): boolean {
  if (lane === PROMPT_LANE) return inFlight < (ready >= BATCH ? PROMPT_LANE_BATCHES : PROMPT_LANE_PARTIAL_BATCHES);
  if (isSharedLane(lane)) return inFlight < rules.sharedLaneBatches;
  // Led retries when due, beside batches of the lane still waiting for their time; else a full one.
  if (rules.led && isRetryLane(lane)) return inFlight < RETRY_LANE_BATCHES;
  return ready >= BATCH && inFlight < LANE_BATCHES;
}
