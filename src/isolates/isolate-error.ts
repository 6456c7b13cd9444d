/** The isolate could not be started or did not answer; `status` is what the caller should hear. */
export class IsolateError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The pool gave the call no process (no room within the wait, or the pool stopping): nothing ran. */
export const isNoRoom = (err: unknown): err is IsolateError => err instanceof IsolateError && err.status === 503;
