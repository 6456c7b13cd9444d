import { Context } from '@temporalio/activity';
import { operationPhases, type OperationPhase, type OperationRequest, type PageCursor } from '../delivery-log/types';
import type { DeliveryReads } from '../delivery-log/delivery-reads';
import { recordingTime, type EventRecords } from '../delivery-log/event-records';
import type { OperationRecords } from '../delivery-log/operation-records';
import type { ReceiverHealthReads } from '../delivery-log/health-reads';
import type { PendingDelivery } from '../delivery-log/rows';
import type { Logger } from '../logger';
import { handOverAccepted } from '../delivery-log/hand-over';
import { YieldingPace, type FirstAttemptLag } from './yielding-pace';
import { operationHandOverGap } from '../metrics';

/** Deliveries an operation's page takes. */
const OPERATION_PAGE = 500;

/**
 * A page goes to the shards this many at a time, at least HAND_OVER_GAP_MS apart, further
 * apart while new events' first attempts on the worker start late (see YieldingPace).
 * Handed over at once, its 500 attempts went out together, and other installations' first
 * attempts queued behind them on the worker (bench (o), scale 0.2: another tenant's p99
 * 571 ms during a replay, 90 ms before). A worker that dies mid-page leaves the rest
 * recorded and not handed over: the stranded sweep's.
 */
const HAND_OVER_CHUNK = 25;
const HAND_OVER_GAP_MS = 25;
/** The longest gap: a page's 20 parts then take 10 s, so a backlog moves at some 48 a second however busy the worker is. */
const HAND_OVER_MAX_GAP_MS = 500;
/**
 * A page gives way for this long at most, then hands over what is left at once: its
 * activity's timeout is 30 s, and a hand-over can take 1.5 s while Temporal is slow, as
 * it is when the worker is busy.
 */
const GIVE_WAY_MS = 10_000;
/** No hand-over for this long, no operation runs on the worker: the next starts from the least gap (between two pages of one, a few seconds pass at most). */
const PACE_FORGOTTEN_MS = 10_000;
/**
 * New events' first attempts starting this much later than the quickest of the last minute
 * or two (their median over a gap) are being delayed. Here, with nothing else running, they start 22 ms
 * after their record at the quickest, 30 at the median, 47 at p90 (bench (o), 395 of
 * them); their median over a gap is 30 ms past the quickest in 2-5% of gaps.
 */
const FIRST_ATTEMPT_DELAY_MS = 30;

export interface OperationDependencies {
  operations: OperationRecords;
  health: ReceiverHealthReads;
  events: EventRecords;
  deliveries: DeliveryReads;
  ingest: { handOverRecorded(deliveries: PendingDelivery[]): Promise<void> };
  logger: Logger;
}

/** A page's answer: where the next starts (none when this was the last). */
export interface OperationPage {
  handled: number;
  next?: PageCursor | 'more';
}

/** The activities of background operations (see operationWorkflow): each page idempotent, so a retried one does nothing twice. */
export function createOperationActivities(deps: OperationDependencies, firstAttempts: FirstAttemptLag) {
  const pace = new YieldingPace({ baseMs: HAND_OVER_GAP_MS, maxMs: HAND_OVER_MAX_GAP_MS, idleMs: PACE_FORGOTTEN_MS, delayMs: FIRST_ATTEMPT_DELAY_MS }, firstAttempts);
  async function handOver(deliveries: PendingDelivery[]): Promise<void> {
    const parts = Math.ceil(deliveries.length / HAND_OVER_CHUNK);
    const givesWayUntil = performance.now() + GIVE_WAY_MS;
    for (let part = 0; part < parts; part++) {
      if (part > 0 && performance.now() < givesWayUntil) {
        await pace.wait((ms) => Context.current().sleep(ms));
        operationHandOverGap.set(pace.nextGapMs / 1000);
      }
      await handOverAccepted(deps.ingest, deliveries.slice(part * HAND_OVER_CHUNK, (part + 1) * HAND_OVER_CHUNK), deps.logger);
    }
  }

  return {
    /** Counts what the operation will handle and records it; answers when it began (ms since 1970). */
    async beginOperation(request: OperationRequest): Promise<number> {
      // A release follows a resume: the receiver's count starts over.
      if (request.kind === 'release_held') await deps.health.startOver(request.installationId);
      const held = request.kind === 'release_held' ? await deps.operations.countHeld(request.installationId, request.heldUntil) : 0;
      const failed = operationPhases(request).includes('replay') ? await deps.operations.countFailedEvents(request.installationId, request.since, request.until) : 0;
      return deps.operations.begin(request, held + failed);
    },

    /**
     * One page of a phase: held deliveries released in order of ingest (pending again and
     * handed to their shards, or dropped), or failed deliveries replayed, once per event,
     * newest first from `after`, recorded before `began` (not the operation's own replays).
     */
    async operationPage(request: OperationRequest, began: number, phase: OperationPhase, after?: PageCursor): Promise<OperationPage> {
      if (phase === 'release') {
        const released = await deps.operations.releaseHeld(request.id, request.installationId, request.held ?? 'deliver', OPERATION_PAGE, request.heldUntil);
        if (request.held !== 'drop' && released.length) await handOver(released);
        return { handled: released.length, ...(released.length === OPERATION_PAGE && { next: 'more' as const }) };
      }
      const until = Math.min(request.until ?? Infinity, began - 1);
      const page = await deps.deliveries.list({ orgs: [request.organizationId], installation: request.installationId, status: 'failed', since: request.since, until }, OPERATION_PAGE, after);
      // Once per event: not one replayed already (by an earlier page, or this one run before), nor twice in the page.
      const replayed = await deps.operations.replayedSince(request.installationId, [...new Set(page.items.map((delivery) => delivery.eventId))], began);
      const originals = page.items.filter((delivery) => {
        if (replayed.has(delivery.eventId)) return false;
        replayed.add(delivery.eventId);
        return true;
      });
      const replays = await deps.events.recordReplays(originals, recordingTime(), (trx, recorded) => deps.operations.advance(request.id, recorded.length, originals.length - recorded.length, trx));
      if (replays.length) await handOver(replays);
      return { handled: originals.length, ...(page.next && { next: page.next }) };
    },

    async finishOperation(id: string, status: 'done' | 'cancelled'): Promise<void> {
      await deps.operations.finish(id, status);
    },
  };
}
