import type { AttemptResult } from '../webhooks/schedule';

/**
 * `held`: accepted for an installation the platform paused, kept unattempted until a resume
 * delivers or drops it; or, reason `receiver_failing`, for one whose receiver has been
 * failing every attempt a while, until it answers again (see ReceiverStates.holding).
 */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'skipped', 'held'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
/** Why a delivery of an active installation is held: its receiver has been failing every attempt. */
export const RECEIVER_FAILING = 'receiver_failing';

/** One attempt as recorded: the attempt's result without the Retry-After it carried, plus the wait chosen after it. */
export type AttemptRecord = Omit<AttemptResult, 'retryAfterMs'> & {
  attempt: number;
  /** The wait chosen before the next attempt. */
  nextDelayMs?: number;
};

/** The shard workflow run that made a delivery's attempts, with its Temporal UI link. */
export interface WorkflowLink {
  workflowId: string;
  runId: string;
  url?: string;
}

export interface DeliverySummary {
  id: string;
  eventId: string;
  installationId: string;
  organizationId: string;
  eventType: string;
  url?: string;
  status: DeliveryStatus;
  createdAt: string;
  completedAt?: string;
  skipReason?: string;
  /** Why a delivery failed without a receiver's answer deciding it. */
  failureReason?: string;
  /** Why a delivery is held when its installation is not paused (receiver_failing). */
  heldReason?: string;
  replayOf?: string;
  attemptCount: number;
  workflow?: WorkflowLink;
}

export interface Delivery extends DeliverySummary {
  /** The body as its receiver got it: every attempt sends these bytes. */
  payload: string;
  /** Each with the shard run that made it (a delivery's attempts may span runs). */
  attempts: (AttemptRecord & { workflow?: WorkflowLink })[];
}

/** A delivery as fan-out plans it, before any attempt. */
export interface NewDelivery {
  id: string;
  eventId: string;
  installationId: string;
  organizationId: string;
  eventType: string;
  /** The serialized payload; every attempt sends exactly these bytes. */
  body: string;
  url?: string;
  /** Set when fan-out already knows no attempt must be made (a paused installation). */
  skipReason?: string;
  /** Kept unattempted until its installation, paused by the platform, is resumed (or its receiver answers again: `heldReason`). */
  held?: true;
  heldReason?: string;
  replayOf?: string;
}

export interface NewEvent {
  eventId: string;
  organizationId: string;
  eventType: string;
  deliveries: NewDelivery[];
}

/** What the log holds of an event: the first ingest's answer. */
export interface EventRecord {
  eventId: string;
  /** Of the event as first recorded: a repeat must name the same. */
  organizationId: string;
  eventType: string;
  deliveryIds: string[];
  /** This call recorded it (otherwise an earlier ingest did). */
  fresh: boolean;
}

/** One delivery of an attempt batch, as the log knows it: as planned, with what earlier runs recorded of it. */
export interface DeliveryToAttempt extends Pick<NewDelivery, 'id' | 'eventId' | 'installationId' | 'eventType' | 'body' | 'replayOf'> {
  /** ms since 1970: when it was recorded (its place in an ordered line). */
  createdAt: number;
  /** The attempt asked for, when an earlier run of the batch recorded it: returned instead of sending it again. */
  recorded?: AttemptRecord;
  /**
   * The attempt asked for, started and not recorded: by an earlier run of the batch that
   * died before recording its answer, or by another workflow's run (`workflowId`), which
   * may still be making it (an ordered line and the shard that held its delivery before).
   */
  interrupted?: StartedAttempt & { workflowId: string };
  /** Earlier attempts recorded `interrupted`: their answers were never seen. */
  interruptedBefore: number;
  /** ms since 1970: when it was released from a hold (held, then pending again, never attempted), if it was. */
  releasedAt?: number;
}

/** An attempt as written before it goes out (see AttemptRecords.recordStarted). */
export interface StartedAttempt extends Pick<AttemptRecord, 'attempt' | 'startedAt' | 'url'> {
  deliveryId: string;
}

/** What an attempt batch writes for one delivery. */
export interface DeliveryOutcome {
  id: string;
  status: DeliveryStatus;
  reason?: string;
  attempt?: AttemptRecord;
}

export interface DeliveryFilter {
  orgs: string[];
  installation?: string;
  status?: DeliveryStatus;
  eventType?: string;
  eventId?: string;
  /** Unix ms, inclusive. */
  since?: number;
  until?: number;
}

/** Where the next page starts: after this (createdAt, id). */
export interface PageCursor {
  createdAt: number;
  id: string;
}

/*
 * Background operations over many deliveries of one installation: the release of what was
 * held while the platform paused it, and bulk replays of failed deliveries. Each is a
 * workflow (durable, in the Temporal UI) writing its progress to the log, which the API
 * reads (GET /v1/operations/:id).
 */

export const OPERATION_KINDS = ['release_held', 'replay_failed'] as const;
export type OperationKind = (typeof OPERATION_KINDS)[number];

export interface OperationRequest {
  id: string;
  kind: OperationKind;
  organizationId: string;
  installationId: string;
  /** release_held: deliver (in order of ingest) or drop what was held, up to the resume (ms since 1970): what a later pause holds is that pause's. */
  held?: 'deliver' | 'drop';
  heldUntil?: number;
  /**
   * replay_failed: the failed deliveries recorded in this range (ms since 1970, inclusive);
   * release_held with `since`: those replayed too, after the release (what failed since the trouble began).
   */
  since?: number;
  until?: number;
}

/** What an operation does, in order: a release of what was held, a replay of what failed, or both. */
export type OperationPhase = 'release' | 'replay';
export function operationPhases(request: OperationRequest): OperationPhase[] {
  if (request.kind === 'replay_failed') return ['replay'];
  return request.since === undefined ? ['release'] : ['release', 'replay'];
}

export interface Operation {
  id: string;
  kind: OperationKind;
  installationId: string;
  /** `failed`: its workflow ended without finishing it (terminated from the Temporal UI, timed out, failed); what it did stays done. */
  status: 'running' | 'done' | 'cancelled' | 'failed';
  /** Deliveries it will handle, counted when it began. */
  total: number;
  done: number;
  /** Those it could not handle (purged since it began). */
  failed: number;
  left: number;
  request: Pick<OperationRequest, 'held' | 'since' | 'until'>;
  createdAt: string;
  updatedAt: string;
  finishedAt?: string;
}
