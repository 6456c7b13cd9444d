import { ExposableError } from './errors';
import type { IntegrationContext } from './index';

/** SPEC.md's createOAuthHandler parameter. */
export interface OAuthConfig {
  clientId: string;
  clientSecret: string;
  authorizeURL: string;
  accessTokenURL: string;
  /** Default: the public endpoint plus `/oauth`. */
  redirectURL?: string;
  scopes?: string[];
  prompt?: string;
  /** Turns the token exchange's response into what is stored; throws when it is not ok. */
  extractCredentials?: (response: Response) => Promise<{ configuration: { oauth_credentials: Record<string, unknown> } }>;
}

async function defaultExtractCredentials(response: Response): Promise<{ configuration: { oauth_credentials: Record<string, unknown> } }> {
  if (!response.ok) throw new ExposableError(`the provider refused the code (HTTP ${response.status})`, 502);
  const body = (await response.json()) as { access_token?: unknown };
  if (typeof body.access_token !== 'string') throw new ExposableError('the provider answered no access_token', 502);
  return { configuration: { oauth_credentials: { access_token: body.access_token } } };
}

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
 * `context.environment.secrets`.
 */
export function createOAuthHandler(config: OAuthConfig | ((context: IntegrationContext) => OAuthConfig)) {
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
        const target = new URL(settings.authorizeURL);
        target.searchParams.set('client_id', settings.clientId);
        target.searchParams.set('redirect_uri', redirectUri);
        target.searchParams.set('response_type', 'code');
        if (settings.scopes?.length) target.searchParams.set('scope', settings.scopes.join(' '));
        if (settings.prompt) target.searchParams.set('prompt', settings.prompt);
        target.searchParams.set('state', state);
        return new Response(null, { status: 302, headers: { location: target.toString() } });
      }
      await context.api.request('POST', `${own}/verify`, { state: url.searchParams.get('state') ?? '' });
      const exchange = await fetch(settings.accessTokenURL, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: settings.clientId, client_secret: settings.clientSecret }).toString(),
      });
      const credentials = await (settings.extractCredentials ?? defaultExtractCredentials)(exchange);
      await context.api.installation.updateConfiguration({ oauth_credentials: credentials.configuration.oauth_credentials });
      return page('Connected', 'The connection is authorized. You can close this window.', 200);
    } catch (error) {
      // Only what is meant to be shown (ExposableError, the platform's own refusals) is: any
      // other message may carry internals (a provider's HTML parsed as JSON, say).
      if (!(error instanceof ExposableError)) return page('The connection failed', 'Something went wrong while connecting. Nothing was stored; try again.', 500);
      return page('The connection failed', error.message, error.status >= 400 && error.status <= 599 ? error.status : 500);
    }
  };
}
