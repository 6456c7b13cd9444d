/** The route of an installation's public endpoint (any path under it goes to its code too). */
export const PUBLIC_ENDPOINT_ROUTE = '/v1/integrations/:name/installations/:id/public';

export const publicEndpoint = (baseUrl: string, integration: string, installationId: string): string =>
  `${baseUrl}${PUBLIC_ENDPOINT_ROUTE.replace(':name', () => integration).replace(':id', () => installationId)}`;

/** Where the API serves an integration's image kept under `hash` (immutable: the hash names the bytes). */
export const assetUrl = (baseUrl: string, hash: string): string => `${baseUrl}/v1/assets/${hash}`;

/** Paths the route answers (the router matches regardless of case): they call integration code. */
const PUBLIC_ENDPOINT_PATH = new RegExp(`^${PUBLIC_ENDPOINT_ROUTE.replace(/:\w+/g, '[^/]+')}(/|$)`, 'i');
export const isPublicEndpointPath = (pathname: string): boolean => PUBLIC_ENDPOINT_PATH.test(pathname);
