import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { isGrpcServiceError, WorkflowUpdateFailedError, QueryNotRegisteredError } from '@temporalio/client';
import type { Context, Next } from 'koa';
import type { FieldIssue } from '../installations/configuration';
import { FailureType } from '../contracts/failures';
import type { Logger } from '../logger';
import { recordedPath } from '../tracing/koa';
import { ShardBusyError } from '../ingest/shard-client';
import { isDatabaseUnavailable } from '../delivery-log/database';

/** An error whose message the client may see (DESIGN.md §4 body); anything else is a plain 500. */
export class ApiError extends Error {
  readonly expose = true;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldIssue[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Come back in a second: what a client hears when the engine or the log does not answer in time. */
export const unavailable = (message: string, cause?: unknown) => new ApiError(503, 'unavailable', message, [], { cause });

export const badRequest = (message: string, details: FieldIssue[] = []) => new ApiError(400, 'invalid_request', message, details);
export const notFound = (what: string, details: FieldIssue[] = []) => new ApiError(404, 'not_found', `${what} not found`, details);
export const conflict = (message: string, details: FieldIssue[] = []) => new ApiError(409, 'conflict', message, details);

/** What the platform answers of a dependency (an isolate, the engine) on its own account: with its message. */
const GATEWAY_STATUSES = [502, 503, 504];

const statusCodes: Record<number, string> = { 400: 'invalid_request', 401: 'unauthorized', 404: 'not_found', 405: 'method_not_allowed', 413: 'payload_too_large', 415: 'unsupported_media_type' };

/**
 * Update validators reject with typed ApplicationFailures; they become the matching 4xx
 * here, once, for every route.
 */
export function fromTemporal(err: unknown): unknown {
  if (err instanceof WorkflowNotFoundError) return notFound('resource');
  if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
    const failure = err.cause;
    const details = (failure.details?.[0] as FieldIssue[] | undefined) ?? [];
    if (failure.type === FailureType.invalid) return badRequest(failure.message, details);
    if (failure.type === FailureType.conflict) return conflict(failure.message);
    if (failure.type === FailureType.notFound) return notFound(failure.message);
    if (failure.type === FailureType.busy) return unavailable(failure.message, err);
  }
  if (err instanceof QueryNotRegisteredError) return notFound('resource');
  // INVALID_ARGUMENT: what the client sent (a forged page token, say) was refused by Temporal.
  if (isGrpcServiceError(err) && err.code === 3) return badRequest(`refused: ${err.details || err.message}`);
  // DEADLINE_EXCEEDED, UNAVAILABLE: the engine did not answer in time; come back in a second.
  const grpc = isGrpcServiceError(err) ? err : isGrpcServiceError((err as { cause?: unknown })?.cause) ? ((err as { cause: unknown }).cause as { code: number }) : undefined;
  if (grpc && (grpc.code === 4 || grpc.code === 14)) return unavailable('Temporal did not answer in time; try again', err);
  return err;
}

/**
 * What ingest says when handing events to the engine failed: a refusal stays what it is;
 * anything else (no answer within the deadline, a closed connection, the log's database
 * away) means "not known to be accepted", so the client retries with the same eventId.
 */
export function fromEngine(err: unknown): unknown {
  if (err instanceof ShardBusyError) return unavailable(err.message, err);
  const mapped = fromTemporal(err);
  if (mapped instanceof ApiError) return mapped;
  return unavailable('the event is not known to be accepted: retry it with the same eventId', err);
}

/** DESIGN.md §4's error body of an exposable error. */
export function errorBody(err: Error): { error: string; message: string; details: FieldIssue[] } {
  if (err instanceof ApiError) return { error: err.code, message: err.message, details: err.details };
  return { error: 'internal', message: 'Internal server error', details: [] };
}

/** The body parser's errors, said in terms of what the client sent. */
function bodyParserMessage(err: Error & { type?: string; expose?: boolean; limit?: number }): string {
  if (err.type === 'entity.too.large') return err.limit ? `request body too large: the limit is ${err.limit} bytes (${Math.round((err.limit / 1024 / 1024) * 10) / 10} MiB)` : 'request body too large';
  if (err instanceof SyntaxError || err.type === 'entity.parse.failed') return `request body is not valid JSON: ${err.message}`;
  return err.expose ? err.message : 'Request refused';
}

/** First middleware: every error leaves as `{error, message, details}`, never a stack. */
export function errorMiddleware(logger: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw notFound(`route ${ctx.method} ${ctx.path}`);
    } catch (raw) {
      // An ApiError is the answer already: the checks below read its stack (Temporal's isError), formatting it for nothing.
      const err = (raw instanceof ApiError ? raw : isDatabaseUnavailable(raw) ? unavailable('the delivery log is unavailable for a moment; try again shortly', raw) : fromTemporal(raw)) as Error & { status?: number; expose?: boolean; code?: string; details?: FieldIssue[] };
      // 502-504: a dependency, said by the platform.
      const status = typeof err.status === 'number' && ((err.status >= 400 && err.status < 500) || (err instanceof ApiError && GATEWAY_STATUSES.includes(err.status))) ? err.status : 500;
      if (status === 503) {
        // The message names the dependency; its gRPC stack tells an operator nothing more.
        logger.warn({ reason: (err.cause instanceof Error ? err.cause : err).message, method: ctx.method, path: recordedPath(ctx.path) }, 'dependency unavailable');
        ctx.set('Retry-After', '1');
      }
      if (status === 500) {
        logger.error({ err, method: ctx.method, path: recordedPath(ctx.path) }, 'request failed');
        ctx.status = 500;
        ctx.body = { error: 'internal', message: 'Internal server error', details: [] };
        return;
      }
      ctx.status = status;
      ctx.body = err instanceof ApiError ? errorBody(err) : { error: statusCodes[status] ?? 'invalid_request', message: bodyParserMessage(err), details: [] };
    }
  };
}
