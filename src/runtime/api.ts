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

/** GitBook's answers: the resource under `data`. */
interface GitBookAnswer<T> {
  data: T;
}

/**
 * GitBook's `api.integrations` methods on an installation, on this platform's one
 * installation and one configuration: the space's or site's installation is the
 * installation seen from its target. Another installation is refused (404).
 */
export interface GitBookIntegrationsApi {
  getIntegrationInstallationById(integration: string, installation: string): Promise<GitBookAnswer<InstallationResource>>;
  updateIntegrationInstallation(integration: string, installation: string, body: { configuration?: Record<string, unknown> }): Promise<GitBookAnswer<InstallationResource>>;
  updateIntegrationSpaceInstallation(integration: string, installation: string, space: string, body: { configuration?: Record<string, unknown> }): Promise<GitBookAnswer<InstallationResource>>;
  updateIntegrationSiteInstallation(integration: string, installation: string, site: string, body: { configuration?: Record<string, unknown> }): Promise<GitBookAnswer<InstallationResource>>;
  [method: string]: (...args: never[]) => Promise<unknown>;
}

/** `context.api`: the platform API with the installation's token, limited to its own installation and scopes. */
export interface PlatformApi {
  /** Any API route the installation's token may call; the answer's JSON, or an ExposableError with its status. */
  request<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  installation: {
    get(): Promise<InstallationResource>;
    updateConfiguration(patch: Record<string, unknown>): Promise<InstallationResource>;
  };
  /** GitBook's installation methods (above); its other ones reject, naming themselves. */
  integrations: GitBookIntegrationsApi;
  /** Any other namespace of GitBook's API (spaces, orgs, …): each method rejects, naming itself. */
  [namespace: string]: unknown;
}

/**
 * A method of GitBook's API this platform does not model: it rejects, naming itself, and
 * says so in the integration's log even when the code catches the rejection.
 */
const notModelled = (name: string) => () => {
  const message = `context.api.${name}(): GitBook's API is not this platform's; its content (spaces, revisions, sites, organizations) and this method are not modelled here`;
  console.warn(message);
  return Promise.reject(new ExposableError(message, 501));
};

/** `target`, with `fallback(key)` for any other property (not `then`: awaiting it is no call; nor `toJSON`). */
function withFallback<T extends object>(target: T, fallback: (key: string) => unknown): T {
  return new Proxy(target, {
    get(object, key, receiver) {
      if (typeof key === 'symbol' || key === 'then' || key === 'toJSON' || Reflect.has(object, key)) return Reflect.get(object, key, receiver);
      return fallback(key);
    },
  });
}

/** A namespace of GitBook's API: the methods given, and every other one `notModelled`. */
const gitBookNamespace = <T extends object>(path: string, known: T): T => withFallback(known, (key) => notModelled(`${path}${key}`));

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
  const installation = {
    get: () => request<InstallationResource>('GET', own),
    updateConfiguration: (patch: Record<string, unknown>) => request<InstallationResource>('PATCH', `${own}/configuration`, patch),
  };
  /** GitBook's call on an installation: this one's, or a 404 as the platform answers for any other. */
  const ownOnly = async <T>(id: string, call: () => Promise<T>): Promise<GitBookAnswer<T>> => {
    if (id !== environment.id) throw new ExposableError('installation not found', 404);
    return { data: await call() };
  };
  const update = (id: string, body: { configuration?: Record<string, unknown> }) => ownOnly(id, () => installation.updateConfiguration(body?.configuration ?? {}));
  const integrations = gitBookNamespace('integrations.', {
    getIntegrationInstallationById: (_name: string, id: string) => ownOnly(id, installation.get),
    updateIntegrationInstallation: (_name: string, id: string, body: { configuration?: Record<string, unknown> }) => update(id, body),
    updateIntegrationSpaceInstallation: (_name: string, id: string, _space: string, body: { configuration?: Record<string, unknown> }) => update(id, body),
    updateIntegrationSiteInstallation: (_name: string, id: string, _site: string, body: { configuration?: Record<string, unknown> }) => update(id, body),
  }) as GitBookIntegrationsApi;
  // Any other namespace (spaces, orgs, …) answers every method with a rejection naming it.
  return withFallback({ request, installation, integrations } as PlatformApi, (key) => gitBookNamespace(`${key}.`, {}));
}
