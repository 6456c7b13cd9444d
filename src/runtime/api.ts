import { ExposableError } from './errors';
import type { IntegrationEnvironment } from './types';

/** The binding the platform gives every isolate: requests to the platform API, never through egress. */
export interface PlatformBinding {
  fetch(request: Request): Promise<Response>;
}

export interface InstallationResource {
  id: string;
  integration: string;
  target: { org: string; space?: string; site?: string };
  status: string;
  configuration: Record<string, unknown>;
}

/** `context.api`: the platform API with the installation's token, limited to its own installation and scopes. */
export interface PlatformApi {
  /** Any API route the installation's token may call; the answer's JSON, or an ExposableError with its status. */
  request<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  installation: {
    get(): Promise<InstallationResource>;
    updateConfiguration(patch: Record<string, unknown>): Promise<InstallationResource>;
  };
}

export function createPlatformApi(binding: PlatformBinding | undefined, environment: IntegrationEnvironment): PlatformApi {
  async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (!binding) throw new Error('the platform API binding is missing: this code runs outside the platform');
    const response = await binding.fetch(
      new Request(`${environment.apiEndpoint}${path}`, {
        method,
        headers: { authorization: `Bearer ${environment.apiTokens.installation}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await response.text();
    const parsed = text ? (JSON.parse(text) as unknown) : undefined;
    if (!response.ok) throw new ExposableError((parsed as { message?: string } | undefined)?.message ?? `platform API answered ${response.status}`, response.status);
    return parsed as T;
  }
  const own = `/v1/installations/${encodeURIComponent(environment.id)}`;
  return {
    request,
    installation: {
      get: () => request<InstallationResource>('GET', own),
      updateConfiguration: (patch) => request<InstallationResource>('PATCH', `${own}/configuration`, patch),
    },
  };
}
