import { heartbeat } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { installationWorkflowId, moveToVersionUpdate, type VersionChange } from '../contracts/installation';
import { FailureType } from '../contracts/failures';
import type { InstallationProjection } from '../installations/types';
import type { NewEvent, PageCursor } from '../delivery-log/types';
import type { PendingDelivery } from '../delivery-log/rows';
import type { LogSweeps } from '../delivery-log/log-sweeps';
import { deliveryId } from '../ids';
import type { DirectoryIndex } from '../delivery-log/directory-index';
import type { IntegrationLogStore } from '../delivery-log/integration-logs';
import { createAttemptBatch, type AttemptBatchDependencies } from './attempt-batch';
import { createAutoPause } from './auto-pause';
import { createHeldRelease } from './held-release';
import { createLineDrain } from './ordered-line';
import { createOperationActivities, type OperationDependencies } from './operations';
import { createOperationEnds } from './operation-ends';
import { FirstAttemptLag } from './yielding-pace';
import { planOperationalDeliveries, type OperationalEvent } from '../installations/operational-events';

/** What installation workflows hand to dispatchInstallationEvents. */
export interface PlatformEvent {
  type: 'installation_setup' | 'space_installation_setup';
  eventId: string;
  installationId: string;
  [field: string]: unknown;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** A delivery never attempted this long after it was recorded may never have reached its shard (hand-overs take 2 s at most). */
const STRANDED_AFTER_MS = 60_000;
/** Stranded deliveries handed over again per sweep. */
const STRANDED_PER_SWEEP = 1000;
/**
 * A delivery attempted but still pending this long after it was recorded has outlived its
 * retries (four attempts of 10 s, waits of 60 s at most) by far: the shard run holding it
 * ended without it. Handed over again, its recorded attempts are not sent again.
 */
const OVERDUE_RETRY_AFTER_MS = 15 * 60_000;

/**
 * What activities need of ingest (the IngestService the process built): the platform's own
 * events recorded and handed to their shards, stranded deliveries handed over again. Named
 * here so that activities, which workflows call, never import ingest, which calls workflows.
 */
export interface EventIntake {
  commit(events: NewEvent[]): Promise<unknown>;
  handOverRecorded(deliveries: PendingDelivery[]): Promise<void>;
}

export interface ActivityDependencies extends AttemptBatchDependencies, OperationDependencies {
  /** Stranded deliveries and retention. */
  sweeps: LogSweeps;
  directory: DirectoryIndex;
  /** Integration code's log lines: under the delivery log's retention too. */
  integrationLogs: IntegrationLogStore;
  /** Records the platform's own events (installation_setup) and hands them to the delivery shards. */
  ingest: EventIntake;
  /** PLATFORM_DELIVERY_RETENTION_DAYS */
  retentionDays: number;
  /** Rollouts move installations through their workflows' updates. */
  client: Client;
  /** The platform's task queue: workflows that activities start run there (not on the retry queue an attempt batch may run on). */
  taskQueue: string;
}

/** Activities get their dependencies from the worker, so tests hand in real or local ones. */
/** Installations a rollout's activity moves at most. */
const ROLLOUT_PAGE = 100;

/** An update refused because the installation was deleted meanwhile (its validator's 404). */
const isDeletedRefusal = (err: unknown): boolean => err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.type === FailureType.notFound;

export function createActivities(deps: ActivityDependencies) {
  const releaseHeld = createHeldRelease(deps);
  const recordEndedOperations = createOperationEnds(deps);
  const firstAttempts = new FirstAttemptLag();
  const attemptDeliveries = createAttemptBatch({ ...deps, firstAttempts, afterOutcomes: createAutoPause(deps), afterRecovery: releaseHeld.recovered, handOver: (deliveries) => deps.ingest.handOverRecorded(deliveries) });
  return {
    attemptDeliveries,
    drainLine: createLineDrain(deps, attemptDeliveries),
    ...createOperationActivities(deps, firstAttempts),

    /** Deliveries the platform could not attempt end failed, with the reason, and stay replayable. */
    async failDeliveries(ids: string[], reason: string): Promise<void> {
      await deps.attempts.recordOutcomes(ids.map((id) => ({ id, status: 'failed' as const, reason })), { workflowId: '', runId: '' });
    },

    /** The directory's read model, written before a creation answers. */
    async saveDirectory(entries: Parameters<DirectoryIndex['save']>[0]): Promise<void> {
      await deps.directory.save(entries);
    },

    /** An installation's read model, written before its change answers. */
    async saveInstallation(installation: InstallationProjection): Promise<void> {
      await deps.installations.save(installation);
    },

    /**
     * The platform's own events of an installation (installation_setup, space_installation_setup)
     * into the delivery pipeline, like any event: recorded, then handed to a shard. The event
     * ids are the installation's and its revision's, so a retried activity records nothing twice.
     */
    async dispatchInstallationEvents(installation: { id: string; org: string }, events: PlatformEvent[]): Promise<void> {
      await deps.ingest.commit(
        events.map((event): NewEvent => ({
          eventId: event.eventId,
          organizationId: installation.org,
          eventType: event.type,
          deliveries: [{ id: deliveryId(event.eventId, installation.id), eventId: event.eventId, installationId: installation.id, organizationId: installation.org, eventType: event.type, body: JSON.stringify(event) }],
        })),
      );
    },

    /**
     * An operational event (an installation paused or resumed) to the organization's webhook
     * installations that select it, through the delivery pipeline like any event; its id is
     * the installation's and its revision's, so a retried activity records nothing twice.
     */
    async announceOperational(event: OperationalEvent): Promise<void> {
      const installations = await deps.installations.of([event.organizationId], ['active', 'paused']);
      await deps.ingest.commit([{ eventId: event.eventId, organizationId: event.organizationId, eventType: event.type, deliveries: planOperationalDeliveries(event, installations) }]);
    },

    /**
     * Hands stranded deliveries (see strandedDeliveriesWorkflow) to their shards again, oldest
     * first from `after`, with retries overdue by far; answers where the next sweep goes on
     * (nothing: from the start). Those a shard did not take (busy, or the engine away) are
     * reached again on the next pass.
     */
    async resumeStranded(after?: PageCursor): Promise<{ found: number; next?: PageCursor }> {
      const stranded = await deps.sweeps.stranded(Date.now() - STRANDED_AFTER_MS, STRANDED_PER_SWEEP, after);
      const overdue = await deps.sweeps.overdueRetries(Date.now() - OVERDUE_RETRY_AFTER_MS, STRANDED_PER_SWEEP);
      // First, operations whose workflow ended without finishing them: a release of held deliveries among them no longer keeps the held sweep away.
      await recordEndedOperations().catch((err: Error) => deps.logger.warn({ err: err.message }, 'operations running were not all checked against their workflows; the next pass tries again'));
      // Held for an installation not paused: released if its receiver answers, one tried (with the overdue) if not.
      overdue.push(...(await releaseHeld.sweep(Date.now() - STRANDED_AFTER_MS, STRANDED_PER_SWEEP)));
      if (overdue.length) deps.logger.warn({ overdue: overdue.length, ids: overdue.slice(0, 10).map((delivery) => delivery.id) }, 'retries overdue by far handed to their shards again: a shard run ended without them');
      await deps.ingest.handOverRecorded([...stranded, ...overdue]).catch((err: Error) => deps.logger.warn({ err: err.message, stranded: stranded.length, overdue: overdue.length }, 'stranded deliveries not all handed over; the next pass tries again'));
      const last = stranded.length === STRANDED_PER_SWEEP ? stranded.at(-1) : undefined;
      return { found: stranded.length + overdue.length, ...(last && { next: { createdAt: last.createdAt, id: last.id } }) };
    },

    /**
     * A page of a rollout: each installation of the integration after `after` (by id) that
     * is not deleted gets the move; its workflow keeps pinned ones and newer ones where they
     * are. Answers how many moved and where the next page starts, if one does.
     */
    async moveInstallationsToVersion(integration: string, change: VersionChange, after?: string): Promise<{ moved: number; next?: string }> {
      const ids = await deps.installations.idsOf(integration, after, ROLLOUT_PAGE);
      let moved = 0;
      for (const id of ids) {
        try {
          const answer = await deps.client.workflow.getHandle(installationWorkflowId(id)).executeUpdate(moveToVersionUpdate, { args: [change, 'rollout'] });
          if (answer.version === change.version) moved += 1;
        } catch (err) {
          // Deleted since it was listed: nothing to move.
          if (!(err instanceof WorkflowNotFoundError) && !isDeletedRefusal(err)) throw err;
        }
        heartbeat(id);
      }
      return { moved, ...(ids.length === ROLLOUT_PAGE && { next: ids.at(-1) }) };
    },

    /** Deletes what is past retention (deliveries and integrations' logs), in bounded steps; returns how many rows went. */
    async purgeDeliveries(): Promise<number> {
      const before = Date.now() - deps.retentionDays * DAY_MS;
      let total = 0;
      for (let removed = Infinity; removed > 0; total += removed) removed = await deps.sweeps.purge(before);
      for (let removed = Infinity; removed > 0; total += removed) removed = await deps.integrationLogs.purge(before);
      return total;
    },
  };
}
