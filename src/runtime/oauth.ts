import { ExposableError } from './errors';
import type { IntegrationContext } from './context';
import type { EnvironmentInstallation } from './types';

/** A provider's answer to the code (or refresh) exchange, as commonly shaped. */
export interface OAuthResponse {
  ok?: boolean;
  access_token: string;
  refresh_token?: string;
  expires_in?: number;
  [field: string]: unknown;
}

/** What is stored under `oauth_credentials` by default. */
export interface OAuthConfiguration {
  access_token: string;
  refresh_token?: string;
  /** ISO time the access token expires, when the provider said. */
  expires_at?: string;
}

/** What `extractCredentials` answers: configuration to merge into the installation's (its `oauth_credentials` at least). */
export interface ExtractedCredentials {
  configuration: { oauth_credentials: Record<string, unknown>; [key: string]: unknown };
}

/**
 * The exchange's answer as `extractCredentials` gets it: the parsed JSON (as GitBook's
 * runtime hands it), which also answers a Response's `ok`, `status`, `headers`, `json()`
 * and `text()` where the JSON has no such field (as SPEC.md's handler was given it).
 */
export type TokenResponse<Parsed = OAuthResponse> = Parsed & Pick<Response, 'ok' | 'status' | 'headers' | 'json' | 'text'>;

/** SPEC.md's createOAuthHandler parameter, with GitBook's forms (URLs made from the installation). */
export interface OAuthConfig<Parsed = OAuthResponse> {
  clientId: string;
  clientSecret: string;
  authorizeURL: string | ((installation: EnvironmentInstallation) => string);
  accessTokenURL: string | ((installation: EnvironmentInstallation) => string);
  /** Default: the public endpoint plus `/oauth`. */
  redirectURL?: string;
  scopes?: string[];
  prompt?: string;
  /** Turns the exchange's answer (an ok one) into what is stored. */
  extractCredentials?: (response: TokenResponse<Parsed>) => ExtractedCredentials | Promise<ExtractedCredentials>;
}

/** The access token, its refresh token and its expiry, from a standard answer. */
export function defaultOAuthExtractCredentials(response: OAuthResponse): ExtractedCredentials {
  if (typeof response.access_token !== 'string') throw new ExposableError('the provider answered no access_token', 502);
  const credentials: OAuthConfiguration = { access_token: response.access_token };
  if (typeof response.refresh_token === 'string') credentials.refresh_token = response.refresh_token;
  if (typeof response.expires_in === 'number') credentials.expires_at = new Date(Date.now() + response.expires_in * 1000).toISOString();
  return { configuration: { oauth_credentials: { ...credentials } } };
}

/** Both shapes at once (see TokenResponse); a refused exchange is an error before anything is extracted. */
async function tokenResponse<Parsed>(response: Response): Promise<TokenResponse<Parsed>> {
  const text = await response.text();
  if (!response.ok) throw new ExposableError(`the provider refused the exchange (HTTP ${response.status})`, 502);
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not for the person connecting (they see the generic page): the author's log has it.
    throw new Error(`the provider's answer to the exchange is not JSON: ${text.slice(0, 200)}`);
  }
  const fallback = { ok: response.ok, status: response.status, headers: response.headers, json: async () => JSON.parse(text) as unknown, text: async () => text };
  for (const [key, value] of Object.entries(fallback)) if (!Object.prototype.hasOwnProperty.call(parsed, key)) Object.defineProperty(parsed, key, { value, enumerable: false });
  return parsed as TokenResponse<Parsed>;
}

/** The installation in GitBook's shape, which URL functions are given. */
function installationOf(context: IntegrationContext): EnvironmentInstallation {
  if (!context.environment.installation) throw new ExposableError('the OAuth flow needs an installation', 400);
  return context.environment.installation;
}

const urlOf = (url: string | ((installation: EnvironmentInstallation) => string), context: IntegrationContext) => (typeof url === 'function' ? url(installationOf(context)) : url);

function page(title: string, message: string, status: number): Response {
  const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return new Response(`<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title></head><body><h1>${escape(title)}</h1><p>${escape(message)}</p></body></html>`, {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8' },
  });
}

/**
 * DESIGN.md §3's OAuth flow as a fetch handler: without `code`, a redirect to the provider
 * with a `state` the platform signs, binds to this installation and time-limits; with
 * `code`, the platform verifies and spends the state, the code is exchanged, and the
 * credentials land in the installation's configuration under `oauth_credentials`. The
 * config may be built per call, so that client id and secret come from
 * `context.environment.secrets`. GitBook's `{replace}` option is taken and has no effect:
 * what extractCredentials answers is always merged into the configuration.
 */
export function createOAuthHandler<Parsed = OAuthResponse>(config: OAuthConfig<Parsed> | ((context: IntegrationContext) => OAuthConfig<Parsed>), _options: { replace?: boolean } = {}) {
  return async (request: Request, context: IntegrationContext): Promise<Response> => {
    const settings = typeof config === 'function' ? config(context) : config;
    const url = new URL(request.url);
    const redirectUri = settings.redirectURL ?? `${context.environment.integration.urls.publicEndpoint}/oauth`;
    const own = `/v1/installations/${encodeURIComponent(context.environment.id)}/oauth/state`;
    try {
      const denied = url.searchParams.get('error');
      if (denied) return page('Authorization refused', `The provider answered: ${denied}. Nothing was stored.`, 400);
      const code = url.searchParams.get('code');
      if (!code) {
        // A member started the connection through the platform (POST …/oauth/connect).
        const { state } = await context.api.request<{ state: string }>('POST', own, { connect: url.searchParams.get('connect') ?? '' });
        const target = new URL(urlOf(settings.authorizeURL, context));
        target.searchParams.set('client_id', settings.clientId);
        target.searchParams.set('redirect_uri', redirectUri);
        target.searchParams.set('response_type', 'code');
        if (settings.scopes?.length) target.searchParams.set('scope', settings.scopes.join(' '));
        if (settings.prompt) target.searchParams.set('prompt', settings.prompt);
        target.searchParams.set('state', state);
        return new Response(null, { status: 302, headers: { location: target.toString() } });
      }
      await context.api.request('POST', `${own}/verify`, { state: url.searchParams.get('state') ?? '' });
      const exchange = await fetch(urlOf(settings.accessTokenURL, context), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: settings.clientId, client_secret: settings.clientSecret }).toString(),
      });
      const answer = await tokenResponse<Parsed>(exchange);
      const credentials = settings.extractCredentials ? await settings.extractCredentials(answer) : defaultOAuthExtractCredentials(answer as unknown as OAuthResponse);
      if (typeof credentials?.configuration?.oauth_credentials !== 'object' || credentials.configuration.oauth_credentials === null) throw new ExposableError('extractCredentials answered no configuration.oauth_credentials: nothing was stored', 500);
      await context.api.installation.updateConfiguration(credentials.configuration);
      return page('Connected', 'The connection is authorized. You can close this window.', 200);
    } catch (error) {
      // Only what is meant to be shown (ExposableError, the platform's own refusals) is: any
      // other message may carry internals (a provider's HTML parsed as JSON, say).
      if (!(error instanceof ExposableError)) {
        console.error('the OAuth callback failed:', error);
        return page('The connection failed', 'Something went wrong while connecting. Nothing was stored; try again.', 500);
      }
      return page('The connection failed', error.message, error.status >= 400 && error.status <= 599 ? error.status : 500);
    }
  };
}

/**
 * The access token of stored credentials, refreshed first when it expires within 10 s (its
 * refresh stored again): GitBook's `getOAuthToken`.
 */
export async function getOAuthToken<Parsed = OAuthResponse>(credentials: OAuthConfiguration, config: Pick<OAuthConfig<Parsed>, 'accessTokenURL' | 'clientId' | 'clientSecret' | 'extractCredentials'>, context: IntegrationContext): Promise<string> {
  if (!credentials.expires_at || Date.parse(credentials.expires_at) - Date.now() > 10_000) return credentials.access_token;
  if (!credentials.refresh_token) throw new ExposableError(`the OAuth token expired at ${credentials.expires_at} and there is no refresh token`, 401);
  const exchange = await fetch(urlOf(config.accessTokenURL, context), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: credentials.refresh_token, client_id: config.clientId, client_secret: config.clientSecret }).toString(),
  });
  const answer = await tokenResponse<Parsed>(exchange);
  const refreshed = config.extractCredentials ? await config.extractCredentials(answer) : defaultOAuthExtractCredentials(answer as unknown as OAuthResponse);
  // A provider that sends no new refresh token keeps the old one valid (undefined fields are not sent ones).
  const sent = Object.fromEntries(Object.entries(refreshed.configuration.oauth_credentials).filter(([, value]) => value !== undefined));
  const stored = { refresh_token: credentials.refresh_token, ...sent } as OAuthConfiguration;
  await context.api.installation.updateConfiguration({ ...refreshed.configuration, oauth_credentials: stored });
  return stored.access_token;
}
