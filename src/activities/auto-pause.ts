import type { Client } from '@temporalio/client';
import { installationWorkflowId, pauseUpdate, type PauseRequest } from '../contracts/installation';
import type { HealthChange } from '../delivery-log/receiver-health';
import type { InstallationIndex } from '../installations/read-model';
import type { InstallationProjection } from '../installations/types';
import { AUTO_PAUSE_MIN_FAILURES, autoPauseAfterMs, WEBHOOK_INTEGRATION } from '../installations/webhook';
import type { Logger } from '../logger';
import { installationPauses } from '../metrics';

/**
 * Whether the platform pauses a webhook installation after a write of its outcomes: its
 * receiver answered 410 Gone, or every delivery has failed for its configured period (and
 * at least 20 in a row). Only an active one that has not turned it off.
 */
export function pauseReason(change: HealthChange, target: InstallationProjection | undefined, now: number): PauseRequest['reason'] | undefined {
  if (target?.integration !== WEBHOOK_INTEGRATION || target.status !== 'active') return undefined;
  const after = autoPauseAfterMs(target.configuration);
  if (after === undefined) return undefined;
  if (change.gone) return 'receiver_gone';
  return change.consecutiveFailures >= AUTO_PAUSE_MIN_FAILURES && now - change.failingSince >= after ? 'receiver_failing' : undefined;
}

/**
 * Pauses the installations a write finds failing, through their workflows (the pause is an
 * update like a member's, with its reason). Not awaited by the batch: its attempts are not
 * delayed; a pause that fails is asked again by the next failure's write.
 */
export function createAutoPause(deps: { installations: InstallationIndex; client: Client; logger: Logger }) {
  /** Pauses asked and not yet answered in this process: one at a time per installation. */
  const asked = new Set<string>();
  return async function afterOutcomes(changes: HealthChange[]): Promise<void> {
    const candidates = changes.filter((change) => change.gone || change.consecutiveFailures >= AUTO_PAUSE_MIN_FAILURES);
    if (candidates.length === 0) return;
    const targets = await deps.installations.getMany(candidates.map((change) => change.installationId));
    for (const change of candidates) {
      const reason = pauseReason(change, targets.get(change.installationId), Date.now());
      if (!reason || asked.has(change.installationId)) continue;
      asked.add(change.installationId);
      const request: PauseRequest = { reason, troubleSince: new Date(change.failingSince).toISOString() };
      void deps.client.workflow
        .getHandle(installationWorkflowId(change.installationId))
        .executeUpdate(pauseUpdate, { args: [request] })
        .then(
          () => {
            installationPauses.inc({ reason });
            deps.logger.warn({ installationId: change.installationId, reason, consecutiveFailures: change.consecutiveFailures, troubleSince: request.troubleSince }, 'installation paused: its receiver keeps failing');
          },
          (err: Error) => deps.logger.warn({ installationId: change.installationId, reason, err: err.message }, 'pausing a failing installation failed; the next failure asks again'),
        )
        .finally(() => asked.delete(change.installationId));
    }
  };
}
