import { Client, type ConnectionLike, type Metadata } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import { Metadata as GrpcMetadata, status as grpcStatus } from '@grpc/grpc-js';
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
 * The platform's connection to Temporal: the SDK's native (Rust) client, as the worker's,
 * with every call bounded and its failures counted. Against the SDK's grpc-js client it
 * took 5-10% less of the platform's CPU at full load, and its gRPC work runs off the event
 * loop (scenario (a) alone, runs interleaved: 1,806-1,929 deliveries/s against 1,631-1,683). The
 * native client retries what is retryable itself (backoff from 100 ms); every call
 * without a deadline of its own gets CALL_DEADLINE_MS, retries included, so that a stopped
 * or hung server is an answer within 2 s, not a wait of minutes. The deadline is kept
 * here too: the native client keeps retrying a refused connection past it (5-9 s
 * measured), and says "Timeout expired" (CANCELLED) where grpc-js said DEADLINE_EXCEEDED.
 */
class BoundedConnection implements ConnectionLike {
  readonly workflowService: ConnectionLike['workflowService'];
  readonly operatorService: ConnectionLike['operatorService'];
  readonly plugins: ConnectionLike['plugins'];

  constructor(private readonly native: NativeConnection) {
    this.workflowService = this.bounded(native.workflowService);
    this.operatorService = this.bounded(native.operatorService);
    this.plugins = native.plugins;
  }

  close(): Promise<void> {
    return this.native.close();
  }

  ensureConnected(): Promise<void> {
    return this.native.ensureConnected();
  }

  withDeadline<R>(deadline: number | Date, fn: () => Promise<R>): Promise<R> {
    return this.native.withDeadline(deadline, fn);
  }

  withMetadata<R>(metadata: Metadata, fn: () => Promise<R>): Promise<R> {
    return this.native.withMetadata(metadata, fn);
  }

  withAbortSignal<R>(abortSignal: AbortSignal, fn: () => Promise<R>): Promise<R> {
    return this.native.withAbortSignal(abortSignal, fn);
  }

  /** A service whose every method runs under a deadline (the caller's, or CALL_DEADLINE_MS) and counts its failures by gRPC code. */
  private bounded<S extends object>(service: S): S {
    const native = this.native;
    return new Proxy(service, {
      get(target, name, receiver) {
        const method: unknown = Reflect.get(target, name, receiver);
        if (typeof method !== 'function') return method;
        return (request: unknown) => {
          const call = () => (method as (request: unknown) => Promise<unknown>).call(target, request);
          const own = native.callContextStorage.getStore()?.deadline;
          const deadline = own === undefined ? Date.now() + CALL_DEADLINE_MS : new Date(own).getTime();
          return withinDeadline(own === undefined ? native.withDeadline(deadline, call) : call(), deadline).catch((err: unknown) => {
            const code = (err as { code?: unknown }).code;
            const passed = Date.now() >= deadline && (code === grpcStatus.CANCELLED || code === grpcStatus.DEADLINE_EXCEEDED);
            const thrown = passed ? deadlineExceeded() : err;
            temporalClientErrors.inc({ code: grpcStatus[(thrown as { code?: number }).code ?? -1] ?? 'UNKNOWN' });
            throw thrown;
          });
        };
      },
    });
  }
}

/** What a call that outlived its deadline fails with: a gRPC DEADLINE_EXCEEDED, as the API's errors expect. */
function deadlineExceeded(): Error {
  return Object.assign(new Error('Temporal did not answer within the deadline'), { code: grpcStatus.DEADLINE_EXCEEDED, details: 'Deadline exceeded', metadata: new GrpcMetadata() });
}

/** The call's answer, or DEADLINE_EXCEEDED at the deadline if it has none by then (the call itself runs on and is dropped). */
function withinDeadline<T>(call: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(deadlineExceeded()), Math.max(0, deadline - Date.now()))));
  return Promise.race([call, expired]).finally(() => clearTimeout(timer));
}

export async function connectClient(settings: TemporalSettings): Promise<Client> {
  const connection = new BoundedConnection(await NativeConnection.connect({ address: settings.address }));
  return new Client({ connection, namespace: settings.namespace, dataConverter: dataConverter(settings.encryptionKey), interceptors: { workflow: tracingClientInterceptors(settings.tracing) } });
}
