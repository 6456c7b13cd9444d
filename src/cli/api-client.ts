/** An error the CLI prints as it is, with what to do next, and exits non-zero. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
    readonly exitCode = 1,
    /** What the API answered when it refused, status 0 when no answer came whole. */
    readonly answer?: { status: number; error?: string },
  ) {
    super(message);
  }
}

interface ApiErrorBody {
  error?: string;
  message?: string;
  details?: { field: string; message: string }[];
}

/** No whole answer came: the request may or may not have been taken. */
const noAnswer = (baseUrl: string, err: unknown) =>
  new CliError(`no answer from the API at ${baseUrl}: ${(err as Error).message}`, 'is the service running? pass --api or set PLATFORM_API_URL', 1, { status: 0 });

/** The platform API over fetch, with its error bodies turned into CliErrors. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string | undefined,
  ) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (!this.token) throw new CliError('no API token', 'pass --token or set PLATFORM_TOKEN', 2);
    // Mistakes of this side, said at once rather than taken for an API that does not answer.
    if (!/^[\x21-\x7e]+$/.test(this.token)) throw new CliError('the API token holds characters an HTTP header cannot carry', 'check --token / PLATFORM_TOKEN', 2);
    if (!URL.canParse(this.baseUrl) || !/^https?:$/.test(new URL(this.baseUrl).protocol)) throw new CliError(`${this.baseUrl} is not an http(s) URL`, 'pass --api or set PLATFORM_API_URL, e.g. http://localhost:8080', 2);
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      text = await response.text();
    } catch (err) {
      throw noAnswer(this.baseUrl, err);
    }
    let parsed: unknown;
    try {
      parsed = text ? (JSON.parse(text) as unknown) : undefined;
    } catch {
      // A proxy's HTML page, say: its status still decides; a 2xx that is not ours is no answer.
      if (response.ok) throw noAnswer(this.baseUrl, new Error(`a ${response.status} answer that is not JSON`));
    }
    if (!response.ok) {
      const error = (parsed ?? {}) as ApiErrorBody;
      const details = (error.details ?? []).map((d) => `\n  ${d.field}: ${d.message}`).join('');
      const hint = response.status === 401 ? 'check --token / PLATFORM_TOKEN' : undefined;
      throw new CliError(`${response.status} ${error.message ?? response.statusText}${details}`, hint, 1, { status: response.status, ...(typeof error.error === 'string' && { error: error.error }) });
    }
    return parsed as T;
  }
}
