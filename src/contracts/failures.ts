import { ApplicationFailure } from '@temporalio/workflow';
import type { FieldIssue } from '../installations/configuration';

/**
 * Failure types an update validator or handler raises; the API maps each to an HTTP
 * status (src/api/errors.ts), so the names are part of the contract.
 */
export const FailureType = {
  invalid: 'InvalidInput',
  conflict: 'Conflict',
  notFound: 'NotFound',
  busy: 'Busy',
} as const;

export function invalid(message: string, details: FieldIssue[] = []): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureType.invalid, message, details: [details], nonRetryable: true });
}

export function conflict(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureType.conflict, message, nonRetryable: true });
}

export function notFound(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureType.notFound, message, nonRetryable: true });
}

/** Come back shortly: the API answers 503 with Retry-After. */
export function busy(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureType.busy, message, nonRetryable: true });
}
