import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { DeliveryOutcome, DeliveryToAttempt } from '../delivery-log/types';
import type { InstallationProjection } from '../installations/types';
import { publicEndpoint } from '../installations/urls';
import { sendIntervalMs, signsStandard, WEBHOOK_INTEGRATION } from '../installations/webhook';
import { IsolateError, isNoRoom } from '../isolates/isolate-error';
import { contextOf, injectTraceHeaders, inSpan, tracer } from '../tracing';
import { PLATFORM_VERSION } from '../version';
import { SIGNATURE_HEADER, signatureHeader, STANDARD_WEBHOOK_HEADERS, standardSignature } from '../webhooks/signature';
import type { PaceRecords } from '../delivery-log/pace-records';
import type { IntegrationRuntime } from '../isolates/integration-runtime';
import type { DestinationGuard } from '../net/destination-guard';
import { judge } from './attempt-verdicts';
import { createAgents, InterruptedError, postOnce, unlessStopped, UnsentError } from './http-attempt';

export interface AttemptSenderDependencies {
  /** Events to integration code go into its isolate. */
  runtime: IntegrationRuntime;
  /** PLATFORM_BASE_URL: an integration delivery records its installation's public endpoint. */
  baseUrl: string;
  webhookGuard: DestinationGuard;
  attemptTimeoutMs?: number;
  /** Send slots of installations with a max_per_second (absent: none is throttled). */
  pace?: PaceRecords;
}

/** A 429 without Retry-After holds a throttled installation's sends this long. */
const PACE_RETRY_AFTER_MS = 1000;

/**
 * How an attempt batch makes one attempt: a webhook's signed POST over the process's
 * keep-alive agents, or an event into its integration's isolate, in a span of its own;
 * the receiver's (or the code's) answer judged. Throws only when no attempt was made (no
 * room in the isolate pool, nothing sent).
 */
export function createAttemptSender(deps: AttemptSenderDependencies) {
  const agents = createAgents();
  /** Where an attempt goes: the webhook's URL, or the integration's public endpoint (what its record names). */
  const attemptUrl = (target: InstallationProjection) => (target.integration === WEBHOOK_INTEGRATION ? target.url! : publicEndpoint(deps.baseUrl, target.integration, target.id));

  /** An event to integration code: its isolate's answer decides as a receiver's would (a timeout is retried). */
  async function invokeOne(delivery: DeliveryToAttempt, attempt: number, target: InstallationProjection, stopping: AbortSignal): Promise<DeliveryOutcome> {
    const started = Date.now();
    const record = { attempt, startedAt: new Date(started).toISOString(), url: attemptUrl(target) };
    try {
      const answer = await unlessStopped(deps.runtime.invoke(target, JSON.parse(delivery.body) as Record<string, unknown>), stopping);
      return judge(delivery.id, { ...record, durationMs: Date.now() - started, statusCode: answer.status, responseBody: answer.body.subarray(0, 1024).toString('utf8') }, delivery.interruptedBefore);
    } catch (err) {
      // No room in the isolate pool: no attempt was made, and none is spent (see attemptDeliveries).
      if (isNoRoom(err)) throw err;
      const timeout = err instanceof IsolateError && err.status === 504;
      const error = err instanceof InterruptedError ? 'interrupted' : timeout ? 'timeout' : 'network_error';
      return judge(delivery.id, { ...record, durationMs: Date.now() - started, error, errorMessage: (err as Error).message }, delivery.interruptedBefore);
    }
  }

  async function attemptOne(delivery: DeliveryToAttempt, attempt: number, target: InstallationProjection, stopping: AbortSignal): Promise<DeliveryOutcome> {
    if (target.integration !== WEBHOOK_INTEGRATION) return invokeOne(delivery, attempt, target, stopping);
    const now = Date.now();
    const secrets = target.signingSecrets.filter((s) => !s.expiresAt || Date.parse(s.expiresAt) > now).map((s) => s.secret);
    const timestamp = Math.floor(now / 1000);
    const standard = signsStandard(target.configuration) && {
      [STANDARD_WEBHOOK_HEADERS.id]: delivery.eventId,
      [STANDARD_WEBHOOK_HEADERS.timestamp]: String(timestamp),
      [STANDARD_WEBHOOK_HEADERS.signature]: standardSignature(delivery.eventId, timestamp, delivery.body, secrets),
    };
    const { retryAfterMs, unsent, ...result } = await postOnce(
      {
        url: target.url!,
        body: delivery.body,
        pool: target.id,
        // The attempt's traceparent when tracing: a receiver that traces continues the event's trace.
        headers: injectTraceHeaders({
          'Content-Type': 'application/json',
          'User-Agent': `platform-webhooks/${PLATFORM_VERSION}`,
          [SIGNATURE_HEADER]: signatureHeader(delivery.body, secrets, timestamp),
          ...standard,
        }),
      },
      { guard: deps.webhookGuard, agents, timeoutMs: deps.attemptTimeoutMs, signal: stopping },
    );
    if (unsent) throw new UnsentError(result.errorMessage);
    // A throttled installation's receiver asks for less: all its sends wait, then go slower for a while.
    if (result.statusCode === 429 && deps.pace && sendIntervalMs(target.configuration) !== undefined) await deps.pace.slowDown(target.id, retryAfterMs ?? PACE_RETRY_AFTER_MS);
    return judge(delivery.id, { attempt, ...result }, delivery.interruptedBefore, retryAfterMs);
  }

  /**
   * One attempt in a span of its own: a child of the event's ingest span (so the event's
   * trace runs from its POST to its receiver), linked to the batch's activity span.
   */
  function tracedAttempt(delivery: DeliveryToAttempt, entry: { attempt: number; trace?: string }, target: InstallationProjection, stopping: AbortSignal): Promise<DeliveryOutcome> {
    const batch = trace.getActiveSpan()?.spanContext();
    const span = tracer.startSpan(
      target.integration === WEBHOOK_INTEGRATION ? 'webhook attempt' : 'integration event',
      { kind: SpanKind.CLIENT, links: batch ? [{ context: batch }] : [], attributes: { 'delivery.id': delivery.id, 'delivery.attempt': entry.attempt, 'event.type': delivery.eventType, 'installation.id': delivery.installationId } },
      contextOf(entry.trace),
    );
    return inSpan(span, async () => {
      const outcome = await attemptOne(delivery, entry.attempt, target, stopping);
      if (outcome.attempt?.statusCode !== undefined) span.setAttribute('http.response.status_code', outcome.attempt.statusCode);
      span.setAttribute('delivery.status', outcome.status);
      if (outcome.status !== 'delivered') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.attempt?.error ?? `status ${outcome.attempt?.statusCode ?? outcome.reason}` });
      return outcome;
    });
  }

  return { attemptUrl, tracedAttempt };
}
