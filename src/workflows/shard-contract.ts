import * as wf from '@temporalio/workflow';
import type { FailingKind } from '../webhooks/schedule';

/*
 * What ingest and a delivery shard workflow agree on: the items handed over, the shard an
 * event goes to, the workflows' ids, signal and query. Ingest imports this, never the
 * workflow (which imports the activities, which import ingest).
 */

/** One delivery handed to a shard: attempts happen in batches, per installation. */
export interface ShardItem {
  id: string;
  installationId: string;
  /** The W3C traceparent of the event's ingest span (tracing on): its attempts continue that trace. */
  trace?: string;
  /**
   * How its receiver failed all attempts of its installation's last batch, as the log said
   * at hand-over: a shard of a later epoch, which has not seen that batch, batches it with
   * other failing receivers' from its first attempt (see ShardState's `failing`).
   */
  failing?: FailingKind;
  /** Its receiver answered all attempts of that batch promptly: batched with other prompt receivers' from its first attempt (see ShardState's `prompt`). */
  prompt?: true;
}

export interface ShardEntry extends ShardItem {
  /** The attempt to make next, from 1. */
  attempt: number;
  /** Workflow time (ms) before which it waits; 0 for at once. */
  dueAt: number;
  /** A retry's exact time (ms since 1970, on the clock `clock` of the worker that chose its wait): its attempt waits for it. */
  notBefore?: number;
  clock?: string;
}

export interface ShardInput {
  shard: number;
  /**
   * When the epoch whose hand-overs this workflow takes ends (ms since 1970). Ingest hands
   * over to its shard's workflow of the current epoch, so once the epoch and a grace for
   * late senders are over nothing more comes, and the run completes once it holds nothing:
   * no continue-as-new races a signal. Absent in runs from before epochs (one workflow a shard).
   */
  epochEndsAt?: number;
  /** Carried across continue-as-new: waiting, not yet attempted, and still in flight. */
  entries?: ShardEntry[];
  /** Hand-overs (signals, or updates in runs before them) before a run continues as new (default 1,500). */
  handOversPerRun?: number;
  /** Carried across continue-as-new: retry lanes whose receivers hang (the workflow's `hanging`). */
  hanging?: string[];
  /** Carried across continue-as-new: installations whose receivers fail everything, and how (see ShardState's `failing`). */
  failing?: [string, FailingKind][];
}

export type { FailingKind };

/** A shard's workflow of one epoch (ingest's), or of all time (runs from before epochs). */
export const shardWorkflowId = (shard: number, epoch?: number): string => (epoch === undefined ? `delivery-shard/${shard}` : `delivery-shard/${shard}/${epoch}`);

/** How long a shard workflow takes hand-overs. */
export const EPOCH_MS = 5000;

/** The shard an event's deliveries go to: FNV-1a of its id, so any API process agrees. */
export function shardOf(eventId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < eventId.length; i++) hash = Math.imul(hash ^ eventId.charCodeAt(i), 0x01000193) >>> 0;
  return hash % shards;
}

/**
 * Hands deliveries to the shard. A signal is durable once the server has written it, so
 * ingest answers without waiting for a workflow task of the shard (an update waited for
 * one, queued behind the shard's activity completions: about 29 ms).
 */
export const handOverSignal = wf.defineSignal<[ShardItem[]]>('hand-over');
/** How runs before the signal took deliveries: kept so that their histories still replay. */
export const enqueueUpdate = wf.defineUpdate<number, [ShardItem[]]>('enqueue');
/** Deliveries queued, waiting or in flight, for operators and tests. */
export const backlogQuery = wf.defineQuery<number>('backlog');

/**
 * Past this many entries the API refuses more (503 Retry-After): what continue-as-new
 * carries must stay well under Temporal's 2 MB payload limit (about 100 bytes an entry).
 */
export const MAX_BACKLOG = 10_000;

/** The workflow type ingest starts per shard and epoch (`deliveryEpochWorkflow` in delivery-shard.ts), by name. */
export const DELIVERY_EPOCH_WORKFLOW = 'deliveryEpochWorkflow';
export type DeliveryEpochWorkflow = (input: ShardInput) => Promise<void>;
