import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import { WorkflowNotFoundError } from '@temporalio/common';
import { deliveryTargetQuery, installationWorkflowId, type DeliveryTarget } from '../workflows/installation';
import { SIGNATURE_HEADER, signatureHeader } from '../webhooks/signature';
import type { AttemptResult } from '../webhooks/schedule';
import { createAgents, postOnce } from './http-attempt';
import { PLATFORM_VERSION } from '../version';
import { TtlCache } from '../ttl-cache';
import type { DestinationGuard } from '../net/destination-guard';

/**
 * How long a worker reuses an installation's URL, selection and secrets. A burst of events
 * to one installation then costs one query, not one per attempt; a pause, a URL change or a
 * rotation reaches attempts already scheduled within this time (new events see it at once,
 * through the fan-out).
 */
const TARGET_TTL_MS = 1000;

export interface ActivityDependencies {
  client: Client;
  /** Where webhook attempts may connect (PLATFORM_ALLOW_PRIVATE_TARGETS, never the platform's ports). */
  webhookGuard: DestinationGuard;
  logger: Logger;
  attemptTimeoutMs?: number;
}

export interface AttemptInput {
  deliveryId: string;
  installationId: string;
  eventType: string;
  body: string;
  attempt: number;
}

export type AttemptOutcome = AttemptResult | { skipReason: string };

/** Activities get their dependencies from the worker, so tests hand in real or local ones. */
export function createActivities(deps: ActivityDependencies) {
  const agents = createAgents();
  // An installation whose workflow is gone (past retention) counts as deleted.
  const targets = new TtlCache(TARGET_TTL_MS, (installationId: string) =>
    deps.client.workflow
      .getHandle(installationWorkflowId(installationId))
      .query(deliveryTargetQuery)
      .catch((err): DeliveryTarget => {
        if (err instanceof WorkflowNotFoundError) return { status: 'deleted', events: [], signingSecrets: [] };
        throw err;
      }),
  );
  return {
    /**
     * One attempt: reads the installation now (a pause, a new URL or a rotated secret
     * apply from the next attempt on), signs with a fresh timestamp, POSTs once.
     */
    async attemptDelivery(input: AttemptInput): Promise<AttemptOutcome> {
      const target = await targets.get(input.installationId);
      if (target.status === 'paused' || target.status === 'deleted') return { skipReason: `installation_${target.status}` };
      if (!target.url || !target.events.includes(input.eventType)) return { skipReason: 'event_not_selected' };
      const now = Date.now();
      const secrets = target.signingSecrets.filter((s) => !s.expiresAt || Date.parse(s.expiresAt) > now).map((s) => s.secret);
      const result = await postOnce(
        {
          url: target.url,
          body: input.body,
          headers: {
            'Content-Type': 'application/json',
            'User-Agent': `platform-webhooks/${PLATFORM_VERSION}`,
            [SIGNATURE_HEADER]: signatureHeader(input.body, secrets, Math.floor(now / 1000)),
          },
        },
        { guard: deps.webhookGuard, agents, timeoutMs: deps.attemptTimeoutMs },
      );
      deps.logger.info({ deliveryId: input.deliveryId, attempt: input.attempt, statusCode: result.statusCode, error: result.error, durationMs: result.durationMs }, 'delivery attempt');
      return result;
    },
  };
}
