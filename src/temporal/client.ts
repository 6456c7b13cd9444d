import type { Logger } from '../logger';
import { Client, Connection, isRetryableError, makeGrpcRetryInterceptor, type ConnectionLike, type Metadata } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import { InterceptingCall, Metadata as GrpcMetadata, status as grpcStatus, type Interceptor } from '@grpc/grpc-js';
import { temporalClientErrors } from '../metrics';
import type { EncryptionCodec } from './codec';
import type { Tracing } from '../tracing';
import { tracingClientInterceptors } from '../tracing/temporal';
import { heardFromServer, trackCall } from './calls-in-flight';

export interface TemporalSettings {
  address: string;
  namespace: string;
  /** The process's payload codec (its keys), shared with its worker and API. */
  codec: EncryptionCodec;
  /** When set, every workflow call carries the caller's span. */
  tracing?: Tracing;
  /** How long a start waits for a server that does not answer yet; 0: not at all. */
  startupWaitMs?: number;
  /** Where that wait is said. */
  logger?: Logger;
}

/** The one data converter of every client and worker: all payloads go through the codec. */
export function dataConverter(codec: EncryptionCodec): DataConverter {
  return { payloadCodecs: [codec] };
}

/** Longest a call of the API's may wait on Temporal, retries included: then it is unavailable (503). */
export const CALL_DEADLINE_MS = 1500;

/**
 * Retries of a server that refuses connections (UNAVAILABLE): about 1.5 s of waits, so that
 * a caller allowed to wait longer for a slow server (REQUEST_ENGINE_WAIT_MS) still learns
 * of a stopped one as soon as before.
 */
const UNAVAILABLE_RETRIES = 8;

/**
 * The SDK's retryable statuses, retried after 50 ms, then 1.7x longer each time up to
 * 250 ms. Its default waits 1 s after RESOURCE_EXHAUSTED, which is what an update racing a
 * workflow's continue-as-new gets ("Update-with-Start could not be executed"): the bench
 * measured 1.5-1.9 s stalls of ingest at each hand-over that way, none over 130 ms this
 * way; and no wait may carry a call far past its deadline.
 */
const retryInterceptor = makeGrpcRetryInterceptor({
  delayFunction: (attempt) => Math.min(250, 50 * 1.7 ** attempt) * (0.8 + Math.random() * 0.4),
  retryableDecider: (attempt, status) => attempt < (status.code === grpcStatus.UNAVAILABLE ? UNAVAILABLE_RETRIES : 20) && isRetryableError(status),
});

/**
 * Every call without a deadline of its own gets CALL_DEADLINE_MS: a stopped or hung server
 * is an answer within 2 s, not a wait of minutes. It comes before the retry interceptor, so
 * that retries stop at the same deadline.
 */
const deadlineInterceptor: Interceptor = (options, nextCall) => {
  const end = trackCall();
  return new InterceptingCall(nextCall({ ...options, deadline: options.deadline ?? Date.now() + CALL_DEADLINE_MS }), {
    start(metadata, _listener, next) {
      next(metadata, {
        onReceiveStatus(status, nextStatus) {
          end();
          if (status.code !== grpcStatus.OK) countFailure(status.code);
          nextStatus(status);
        },
      });
    },
  });
};

/**
 * Innermost, so that every try of a call counts: response headers are the server's own
 * answer, whatever status follows (a busy server's RESOURCE_EXHAUSTED too), never made up
 * on this side. What tells a busy server from a hung one (see EngineWait).
 */
const heardInterceptor: Interceptor = (options, nextCall) =>
  new InterceptingCall(nextCall(options), {
    start(metadata, _listener, next) {
      next(metadata, {
        onReceiveMetadata(received, nextMetadata) {
          heardFromServer();
          nextMetadata(received);
        },
      });
    },
  });

const countFailure = (code: number | undefined) => temporalClientErrors.inc({ code: grpcStatus[code ?? -1] ?? String(code ?? 'UNKNOWN') });

/**
 * Calls that go over the SDK's native (Rust) client: ingest's hand-overs (signal-with-start)
 * and queries. At full load they took 5-10% of the platform's CPU on grpc-js, and their
 * gRPC work now runs off the event loop (scenario (a) alone, runs interleaved:
 * 1,806-1,929 deliveries/s against 1,631-1,683). Both may arrive late without harm, which
 * matters because the native client cannot be stopped at a deadline: it retries a refused
 * connection for up to 10 s after the caller has answered 503. A hand-over that lands late
 * is skipped by the shard (it holds the id) or attempted once (the log says what is
 * final); a query changes nothing. Every other call (starts, updates, terminations) keeps
 * grpc-js, which ends a call at its deadline.
 */
const NATIVE_METHODS = new Set(['signalWithStartWorkflowExecution', 'queryWorkflow']);

/**
 * The API's connection: grpc-js, with NATIVE_METHODS over the native client. Its deadline
 * and metadata apply to both. The native calls are bounded here too: a call without a
 * deadline of its own gets CALL_DEADLINE_MS, and the caller has its answer by then (the
 * native client said CANCELLED, "Timeout expired", where grpc-js said DEADLINE_EXCEEDED,
 * and kept retrying a refused connection for 5-9 s past the deadline).
 */
class SplitConnection implements ConnectionLike {
  readonly workflowService: ConnectionLike['workflowService'];
  readonly operatorService: ConnectionLike['operatorService'];
  readonly plugins: ConnectionLike['plugins'];

  constructor(
    private readonly grpc: Connection,
    private readonly native: NativeConnection,
  ) {
    this.workflowService = this.split(grpc.workflowService, native.workflowService);
    this.operatorService = grpc.operatorService;
    this.plugins = grpc.plugins;
  }

  async close(): Promise<void> {
    await Promise.all([this.grpc.close(), this.native.close()]);
  }

  async ensureConnected(): Promise<void> {
    await Promise.all([this.grpc.ensureConnected(), this.native.ensureConnected()]);
  }

  withDeadline<R>(deadline: number | Date, fn: () => Promise<R>): Promise<R> {
    return this.grpc.withDeadline(deadline, () => this.native.withDeadline(deadline, fn));
  }

  withMetadata<R>(metadata: Metadata, fn: () => Promise<R>): Promise<R> {
    return this.grpc.withMetadata(metadata, () => this.native.withMetadata(metadata, fn));
  }

  withAbortSignal<R>(abortSignal: AbortSignal, fn: () => Promise<R>): Promise<R> {
    return this.grpc.withAbortSignal(abortSignal, () => this.native.withAbortSignal(abortSignal, fn));
  }

  /** The grpc-js service, but NATIVE_METHODS on the native one, each under a deadline (the caller's, or CALL_DEADLINE_MS), failures counted. */
  private split<S extends object>(grpc: S, nativeService: S): S {
    const native = this.native;
    return new Proxy(grpc, {
      get(target, name, receiver) {
        if (typeof name !== 'string' || !NATIVE_METHODS.has(name)) return Reflect.get(target, name, receiver);
        const method = Reflect.get(nativeService, name) as (request: unknown) => Promise<unknown>;
        return (request: unknown) => {
          const call = () => method.call(nativeService, request);
          const end = trackCall();
          const own = native.callContextStorage.getStore()?.deadline;
          const deadline = own === undefined ? Date.now() + CALL_DEADLINE_MS : new Date(own).getTime();
          // Only a result is surely the server's (the native client's errors may carry no code).
          return withinDeadline(own === undefined ? native.withDeadline(deadline, call) : call(), deadline).then((answer) => {
            heardFromServer();
            return answer;
          }, (err: unknown) => {
            const code = (err as { code?: unknown }).code;
            const passed = Date.now() >= deadline && (code === grpcStatus.CANCELLED || code === grpcStatus.DEADLINE_EXCEEDED);
            const thrown = passed ? deadlineExceeded() : err;
            countFailure((thrown as { code?: number }).code);
            throw thrown;
          }).finally(end);
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

/**
 * A connection, once the server answers: a process started while its cluster starts or
 * restarts (a rolling restart, a first `docker compose up`) waits for it rather than exit 1,
 * saying so once, for up to `startupWaitMs`.
 */
async function whenServing<T>(connect: () => Promise<T>, settings: TemporalSettings, deadline: number): Promise<T> {
  let said = false;
  for (let pause = 250; ; pause = Math.min(pause * 2, 4000)) {
    try {
      return await connect();
    } catch (err) {
      if (Date.now() + pause > deadline) throw err;
      if (!said) settings.logger?.warn({ address: settings.address, err: (err as Error).message }, 'Temporal does not answer yet: waiting for it');
      said = true;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** The API's client (a process's Temporal runtime installed first: the native half runs in it). */
export async function connectClient(settings: TemporalSettings): Promise<Client> {
  // One wait for both connections.
  const deadline = Date.now() + (settings.startupWaitMs ?? 0);
  const grpc = await whenServing(() => Connection.connect({ address: settings.address, interceptors: [deadlineInterceptor, retryInterceptor, heardInterceptor] }), settings, deadline);
  const native = await whenServing(() => NativeConnection.connect({ address: settings.address }), settings, deadline).catch(async (err: unknown) => {
    await grpc.close();
    throw err;
  });
  const connection = new SplitConnection(grpc, native);
  return new Client({ connection, namespace: settings.namespace, dataConverter: dataConverter(settings.codec), interceptors: { workflow: tracingClientInterceptors(settings.tracing) } });
}
