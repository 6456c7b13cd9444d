import { AsyncLocalStorage } from 'node:async_hooks';

/** The Temporal calls one request has in flight, and since when it has had one without a break. */
export class CallsInFlight {
  private count = 0;
  /** performance.now() when the count last rose from 0; undefined while none is in flight. */
  waitingSince?: number;

  /** Counts a call begun in this request; answers the function that ends it (once). */
  begin(): () => void {
    if (this.count++ === 0) this.waitingSince = performance.now();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--this.count === 0) this.waitingSince = undefined;
    };
  }
}

const current = new AsyncLocalStorage<CallsInFlight>();

/** performance.now() when a Temporal call of this process last had the server's own answer. */
let lastHeard = -Infinity;

/**
 * Notes that the server answered a call (its response headers came, or its result): a
 * status made up on this side (a deadline, a refused connection, a local error) is not
 * the server's, so callers note only what came from it.
 */
export function heardFromServer(): void {
  lastHeard = performance.now();
}

/** Whether some call of this process had the server's answer at or after `since` (performance.now()). */
export const engineHeardSince = (since: number): boolean => lastHeard >= since;

/** Runs `fn` with its Temporal calls counted in `calls` (see trackCall). */
export const withCallsCounted = <R>(calls: CallsInFlight, fn: () => Promise<R>): Promise<R> => current.run(calls, fn);

/** Counts a call begun now in the current request, if any is being counted; answers the function that ends it. */
export function trackCall(): () => void {
  return current.getStore()?.begin() ?? (() => undefined);
}
