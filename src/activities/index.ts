import type { DeliveryLog } from '../delivery-log/delivery-log';
import type { InstallationIndex } from '../delivery-log/installation-index';
import type { InstallationProjection } from '../delivery-log/types';
import type { Logger } from '../logger';
import type { DestinationGuard } from '../net/destination-guard';
import { createAttemptBatch } from './attempt-batch';

const DAY_MS = 24 * 60 * 60 * 1000;

export interface ActivityDependencies {
  log: DeliveryLog;
  installations: InstallationIndex;
  /** Where webhook attempts may connect (PLATFORM_ALLOW_PRIVATE_TARGETS, never the platform's ports). */
  webhookGuard: DestinationGuard;
  logger: Logger;
  /** PLATFORM_DELIVERY_RETENTION_DAYS */
  retentionDays: number;
  attemptTimeoutMs?: number;
}

/** Activities get their dependencies from the worker, so tests hand in real or local ones. */
export function createActivities(deps: ActivityDependencies) {
  return {
    attemptDeliveries: createAttemptBatch(deps),

    /** Deliveries the platform could not attempt end failed, with the reason, and stay replayable. */
    async failDeliveries(ids: string[], reason: string): Promise<void> {
      await deps.log.recordOutcomes(ids.map((id) => ({ id, status: 'failed' as const, reason })), { workflowId: '', runId: '' });
    },

    /** An installation's read model, written before its change answers. */
    async saveInstallation(installation: InstallationProjection): Promise<void> {
      await deps.installations.save(installation);
    },

    /** Deletes what is past retention, in bounded steps; returns how many deliveries went. */
    async purgeDeliveries(): Promise<number> {
      const before = Date.now() - deps.retentionDays * DAY_MS;
      let total = 0;
      for (let removed = Infinity; removed > 0; total += removed) removed = await deps.log.purge(before);
      return total;
    },
  };
}
