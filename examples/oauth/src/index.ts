import { createIntegration, createOAuthHandler } from 'integration-platform/runtime';

/** The `connect` button's callback_url (`/oauth`) runs the OAuth flow; the rest answers 404. */
const oauth = createOAuthHandler((context) => ({
  clientId: context.environment.secrets.CLIENT_ID!,
  clientSecret: context.environment.secrets.CLIENT_SECRET!,
  authorizeURL: `${context.environment.secrets.PROVIDER_URL}/authorize`,
  accessTokenURL: `${context.environment.secrets.PROVIDER_URL}/token`,
  scopes: ['read'],
  prompt: 'consent',
}));

export default createIntegration({
  async fetch(request, context) {
    if (new URL(request.url).pathname.endsWith('/oauth')) return oauth(request, context);
    return new Response('Not found', { status: 404 });
  },
});
