/** An error the CLI prints as it is, with what to do next, and exits non-zero. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
    readonly exitCode = 1,
    /** The API's status when it refused, 0 when it did not answer: 503, 429 and 0 may be retried as they are. */
    readonly status?: number,
  ) {
    super(message);
  }
}

interface ApiErrorBody {
  error?: string;
  message?: string;
  details?: { field: string; message: string }[];
}

/** The platform API over fetch, with its error bodies turned into CliErrors. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string | undefined,
  ) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (!this.token) throw new CliError('no API token', 'pass --token or set PLATFORM_TOKEN', 2);
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new CliError(`cannot reach the API at ${this.baseUrl}: ${(err as Error).message}`, 'is the service running? pass --api or set PLATFORM_API_URL', 1, 0);
    }
    const text = await response.text();
    const parsed = text ? (JSON.parse(text) as unknown) : undefined;
    if (!response.ok) {
      const error = (parsed ?? {}) as ApiErrorBody;
      const details = (error.details ?? []).map((d) => `\n  ${d.field}: ${d.message}`).join('');
      const hint = response.status === 401 ? 'check --token / PLATFORM_TOKEN' : undefined;
      throw new CliError(`${response.status} ${error.message ?? response.statusText}${details}`, hint, 1, response.status);
    }
    return parsed as T;
  }
}
