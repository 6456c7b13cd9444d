/**
 * An error an integration throws on purpose: the platform answers with its status and
 * `{"error": message}`. Any other error answers 500 `{"error": "Internal server error"}`,
 * its stack written to the integration's log (console.error, which the platform keeps for
 * the integration's owners), never in the answer.
 */
export class ExposableError extends Error {
  readonly exposable = true;

  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

export function errorResponse(error: unknown): Response {
  if (error instanceof ExposableError || (typeof error === 'object' && error !== null && (error as { exposable?: unknown }).exposable === true)) {
    const { message, status } = error as ExposableError;
    return Response.json({ error: message }, { status: Number.isInteger(status) && status >= 400 && status <= 599 ? status : 400 });
  }
  console.error('answered 500:', error);
  return Response.json({ error: 'Internal server error' }, { status: 500 });
}
