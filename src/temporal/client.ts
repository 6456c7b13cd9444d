import { Client, Connection, isRetryableError, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { InterceptingCall, status as grpcStatus, type Interceptor } from '@grpc/grpc-js';
import { temporalClientErrors } from '../metrics';
import { EncryptionCodec } from './codec';
import type { Tracing } from '../tracing';
import { tracingClientInterceptors } from '../tracing/temporal';

export interface TemporalSettings {
  address: string;
  namespace: string;
  encryptionKey: string;
  /** When set, every workflow call carries the caller's span. */
  tracing?: Tracing;
}

/** The one data converter of every client and worker: all payloads go through the codec. */
export function dataConverter(encryptionKey: string): DataConverter {
  return { payloadCodecs: [new EncryptionCodec(encryptionKey)] };
}

/** Longest a call of the API's may wait on Temporal, retries included: then it is unavailable (503). */
export const CALL_DEADLINE_MS = 1500;

/**
 * The SDK's retryable statuses, retried after 50 ms, then 1.7x longer each time up to
 * 250 ms. Its default waits 1 s after RESOURCE_EXHAUSTED, which is what an update racing a
 * shard's continue-as-new gets ("Update-with-Start could not be executed"): the bench
 * measured 1.5-1.9 s stalls of ingest at each hand-over that way, none over 130 ms this
 * way; and no wait may carry a call far past its deadline.
 */
const retryInterceptor = makeGrpcRetryInterceptor({
  delayFunction: (attempt) => Math.min(250, 50 * 1.7 ** attempt) * (0.8 + Math.random() * 0.4),
  retryableDecider: (attempt, status) => attempt < 20 && isRetryableError(status),
});

/**
 * Every call without a deadline of its own gets CALL_DEADLINE_MS: a stopped or hung server
 * is an answer within 2 s, not a wait of minutes. It comes before the retry interceptor, so
 * that retries stop at the same deadline.
 */
const deadlineInterceptor: Interceptor = (options, nextCall) =>
  new InterceptingCall(nextCall({ ...options, deadline: options.deadline ?? Date.now() + CALL_DEADLINE_MS }), {
    start(metadata, _listener, next) {
      next(metadata, {
        onReceiveStatus(status, nextStatus) {
          if (status.code !== grpcStatus.OK) temporalClientErrors.inc({ code: grpcStatus[status.code] ?? String(status.code) });
          nextStatus(status);
        },
      });
    },
  });

export async function connectClient(settings: TemporalSettings): Promise<Client> {
  const connection = await Connection.connect({ address: settings.address, interceptors: [deadlineInterceptor, retryInterceptor] });
  return new Client({ connection, namespace: settings.namespace, dataConverter: dataConverter(settings.encryptionKey), interceptors: { workflow: tracingClientInterceptors(settings.tracing) } });
}
