import * as wf from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { MAX_RETRIES, retryDelayMs, verdict, type AttemptResult } from '../webhooks/schedule';
import { DeliveryStatusKey, EventIdKey, EventTypeKey, InstallationIdKey, OrganizationIdKey } from '../temporal/search-attributes';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'skipped';

export interface DeliveryInput {
  id: string;
  eventId: string;
  installationId: string;
  organizationId: string;
  eventType: string;
  /** The serialized payload; every attempt sends exactly these bytes. */
  body: string;
  /** The installation's URL at fan-out; each attempt records the URL it used. */
  url: string;
  /** Set when the fan-out already knows no attempt must be made. */
  skipReason?: string;
  /** The delivery this one replays. */
  replayOf?: string;
}

export interface AttemptRecord {
  attempt: number;
  startedAt: string;
  durationMs: number;
  url: string;
  statusCode?: number;
  error?: string;
  errorMessage?: string;
  responseBody?: string;
  /** The wait chosen before the next attempt. */
  nextDelayMs?: number;
}

export interface Delivery {
  id: string;
  eventId: string;
  installationId: string;
  organizationId: string;
  eventType: string;
  url: string;
  status: DeliveryStatus;
  createdAt: string;
  completedAt?: string;
  skipReason?: string;
  /** Why a delivery failed without a receiver's answer deciding it. */
  failureReason?: string;
  replayOf?: string;
  attempts: AttemptRecord[];
}

export const deliveryQuery = wf.defineQuery<Delivery>('delivery');
export const deliveryBodyQuery = wf.defineQuery<string>('body');

/**
 * A local activity: one HTTP attempt is short and bounded (10 s), and running it inside the
 * workflow task spares the activity task round trips, which dominate the cost of a
 * delivery. Its result is recorded in history as a marker. A worker that dies mid-attempt
 * loses the workflow task, which Temporal hands to another worker after its timeout.
 */
const { attemptDelivery } = wf.proxyLocalActivities<ReturnType<typeof createActivities>>({
  // The attempt is bounded at 10 s; the margin covers DNS and the installation lookup.
  startToCloseTimeout: '20 seconds',
  // Temporal retries only what never produced an HTTP outcome: the attempt's own result,
  // whatever the receiver said, comes back as a value.
  retry: { initialInterval: '1 second', maximumAttempts: 10 },
});

export function deliverySearchAttributes(input: DeliveryInput, status: DeliveryStatus) {
  return [
    { key: InstallationIdKey, value: input.installationId },
    { key: OrganizationIdKey, value: input.organizationId },
    { key: EventIdKey, value: input.eventId },
    { key: EventTypeKey, value: input.eventType },
    { key: DeliveryStatusKey, value: status },
  ];
}

/**
 * One event to one installation (DESIGN.md §3): a first attempt and at most three
 * retries on durable timers, each attempt recorded in state and in history.
 */
export async function deliveryWorkflow(input: DeliveryInput): Promise<Delivery> {
  const { body: _body, ...fields } = input;
  const delivery: Delivery = { ...fields, status: 'pending', createdAt: new Date(wf.workflowInfo().startTime).toISOString(), attempts: [] };
  wf.setHandler(deliveryQuery, () => delivery);
  wf.setHandler(deliveryBodyQuery, () => input.body);

  const finish = (status: DeliveryStatus, reason?: string): Delivery => {
    delivery.status = status;
    if (status === 'skipped') delivery.skipReason = reason;
    if (status === 'failed' && reason) delivery.failureReason = reason;
    delivery.completedAt = new Date().toISOString();
    wf.upsertSearchAttributes([{ key: DeliveryStatusKey, value: status }]);
    return delivery;
  };

  if (input.skipReason) return finish('skipped', input.skipReason);
  for (let attempt = 1; ; attempt++) {
    let outcome;
    try {
      outcome = await attemptDelivery({ installationId: input.installationId, eventType: input.eventType, body: input.body, deliveryId: input.id, attempt });
    } catch (err) {
      // The platform itself could not attempt (its retries spent): a final, replayable state.
      const cause = (err as Error).cause;
      return finish('failed', `platform_error: ${cause instanceof Error ? cause.message : String(err)}`);
    }
    // Before any attempt a pause means "not for this installation"; after one, the delivery
    // stops as failed so that it stays replayable.
    if ('skipReason' in outcome) return attempt === 1 ? finish('skipped', outcome.skipReason) : finish('failed', outcome.skipReason);
    const record: AttemptRecord = { attempt, ...withoutRetryAfter(outcome) };
    delivery.attempts.push(record);
    delivery.url = outcome.url;
    const next = verdict(outcome);
    if (next === 'delivered') return finish('delivered');
    if (next === 'failed' || attempt > MAX_RETRIES) return finish('failed');
    record.nextDelayMs = retryDelayMs(attempt, Math.random(), outcome.retryAfterMs);
    await wf.sleep(record.nextDelayMs);
  }
}

function withoutRetryAfter({ retryAfterMs: _retryAfterMs, ...result }: AttemptResult): Omit<AttemptResult, 'retryAfterMs'> {
  return result;
}
