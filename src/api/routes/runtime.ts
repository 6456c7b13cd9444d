import type { InstallationProjection } from '../../installations/types';
import { PUBLIC_ENDPOINT_ROUTE, publicEndpoint } from '../../installations/urls';
import { WEBHOOK_INTEGRATION } from '../../installations/webhook';
import type { OAuthTicketKind } from '../../delivery-log/oauth-states';
import { IsolateError } from '../../isolates/isolate-error';
import { answerHeadersFromCode, requestHeadersForCode } from '../public-endpoint-headers';
import type { IsolateAnswer } from '../../isolates/workerd-process';
import type { ApiDeps } from '../deps';
import { requireMember, type Caller } from '../auth';
import { ApiError, badRequest, notFound } from '../errors';
import type { RouteTable } from '../route-table';

/** Largest request body the public endpoint passes on. */
export const PUBLIC_BODY_LIMIT = 10 * 1024 * 1024;
const componentSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    props: { type: 'object' },
    state: { type: 'object' },
    action: { type: 'object', required: ['action'], properties: { action: { type: 'string', minLength: 1 } } },
    context: { type: 'object', description: 'Where the component renders (GitBook’s ContentKit context), handed to its code; {"type":"document"} when not given, as GitBook’s editor always gives one' },
  },
};

/** A render, or an action that completed the interaction (`{type: 'complete', returnValue?}`, GitBook's). */
const elementSchema = {
  oneOf: [
    { type: 'object', required: ['type', 'state', 'props', 'element'], properties: { type: { const: 'element' }, state: { type: 'object' }, props: { type: 'object' }, element: {} } },
    { type: 'object', required: ['type'], properties: { type: { const: 'complete' }, returnValue: { type: 'object' } } },
  ],
};

/** An isolate that failed is the platform's problem to report: 502/504 in the platform's error shape. */
async function invoking(call: () => Promise<IsolateAnswer>): Promise<IsolateAnswer> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof IsolateError) throw new ApiError(err.status, 'integration_unavailable', err.message);
    throw err;
  }
}

/** A paused installation's code is not called, from its public endpoint or its components. */
function refusePaused(installation: InstallationProjection): void {
  if (installation.status === 'paused') throw new ApiError(403, 'installation_paused', 'the installation is paused');
}

/** `/v1/integrations/:name/installations/:id/public` split at its slashes. */
const PUBLIC_ENDPOINT_SEGMENTS = PUBLIC_ENDPOINT_ROUTE.split('/').length;

export function runtimeRoutes(routes: RouteTable, deps: ApiDeps): void {
  /** A live installation of a published integration, with what calls into its code need. */
  async function runnable(id: string): Promise<InstallationProjection | undefined> {
    const installation = (await deps.installations.getMany([id])).get(id);
    return installation && installation.status !== 'deleted' && installation.integration !== WEBHOOK_INTEGRATION && installation.version !== undefined ? installation : undefined;
  }

  routes.add<Buffer>(
    {
      method: 'all',
      path: PUBLIC_ENDPOINT_ROUTE,
      summary: 'An installation’s public endpoint (and any path under it): the request goes to the integration’s fetch handler, its answer comes back as it is',
      access: 'anyone',
      rawBodyLimit: PUBLIC_BODY_LIMIT,
      responses: { 200: { description: 'Whatever the integration answers' }, 403: { description: 'The installation is paused' }, 404: { description: 'No such installation' }, 502: { description: 'The integration failed' }, 503: { description: 'No room in the isolate pool within 5 s (Retry-After)' }, 504: { description: 'The integration ran past 10 s' } },
    },
    async ({ ctx, params, body }) => {
      const installation = await runnable(params.id!);
      if (!installation || installation.integration !== params.name) throw notFound('installation');
      refusePaused(installation);
      const base = publicEndpoint(deps.baseUrl, installation.integration, installation.id);
      // What follows /public as the caller sent it, still encoded: the router's decoded copy
      // would turn %3F into a query and %23 into a fragment of the URL the code is given.
      const subpath = ctx.path.split('/').slice(PUBLIC_ENDPOINT_SEGMENTS).map((segment) => `/${segment}`).join('');
      const event = { type: 'fetch', request: { method: ctx.method, url: `${base}${subpath}${ctx.search}`, headers: requestHeadersForCode(ctx.headers) } };
      const answer = await invoking(() => deps.runtime.invoke(installation, event, body.length ? body : undefined));
      return { status: answer.status, headers: answerHeadersFromCode(answer.headers), body: answer.body };
    },
  );

  routes.add<{ props?: Record<string, unknown>; state?: Record<string, unknown>; action?: { action: string }; context?: Record<string, unknown> }>(
    {
      method: 'post',
      path: '/v1/installations/:id/components/:componentId',
      summary: 'Render a component of the installation’s integration (ui_render); an action may change its state',
      access: 'member',
      body: componentSchema,
      responses: { 200: { description: 'The rendered component', schema: elementSchema }, 403: { description: 'The installation is paused' }, 404: { description: 'No such installation or component' }, 502: { description: 'The integration failed' }, 503: { description: 'No room in the isolate pool within 5 s (Retry-After)' }, 504: { description: 'The integration ran past 10 s' } },
    },
    async ({ caller, params, body }) => {
      const installation = await runnable(params.id!);
      if (!installation) throw notFound('installation');
      requireMember(caller, installation.target.org, 'installation');
      refusePaused(installation);
      const answer = await invoking(() => deps.runtime.invoke(installation, { type: 'ui_render', componentId: params.componentId, props: body.props ?? {}, state: body.state, action: body.action, context: body.context ?? { type: 'document' } }));
      // Code that skips the SDK may answer anything: what is no JSON is the integration's failure.
      const parsed = jsonOf(answer.body) as { error?: string } | null | undefined;
      if (answer.status === 404) throw notFound(`component ${params.componentId}`);
      if (answer.status >= 400 && answer.status < 500) throw new ApiError(answer.status, 'integration_refused', parsed?.error ?? `the integration answered ${answer.status}`);
      if (answer.status !== 200 || parsed === undefined) throw new ApiError(502, 'integration_failed', `the integration answered ${answer.status}${parsed?.error ? `: ${parsed.error}` : parsed === undefined ? ' without JSON' : ''}`);
      // How long the code said its render may be kept (setCache): by this member only.
      const maxAge = /max-age=(\d+)/.exec(String(answer.headers['cache-control'] ?? ''))?.[1];
      return { status: 200, body: parsed, ...(maxAge && { headers: { 'cache-control': `private, max-age=${maxAge}` } }) };
    },
  );
}

/**
 * The OAuth flow: a member of the installation's organization starts the connection (a
 * ticket for its public endpoint); the integration's code, with its own token, spends the
 * ticket for a state and spends the state when the provider sends the user back.
 */
export function oauthRoutes(routes: RouteTable, { oauthStates, installations, baseUrl }: ApiDeps): void {
  const own = (caller: Caller, id: string) => {
    if (caller.kind !== 'installation') throw new ApiError(403, 'forbidden', 'only the installation’s own token (its integration’s code) runs its OAuth flow');
    if (caller.installationId !== id) throw notFound('installation');
  };
  const spend = async (ticket: string, kind: OAuthTicketKind, installationId: string, field: string) => {
    const refused = await oauthStates.spend(ticket, kind, installationId);
    if (refused) throw badRequest(refused, [{ field, message: refused }]);
  };
  routes.add(
    {
      method: 'post',
      path: '/v1/installations/:id/oauth/connect',
      summary: 'Start the installation’s OAuth connection: a ticket for its public endpoint (members of its organization; 10 minutes, single use)',
      access: 'member',
      responses: {
        200: { description: 'Open `url`, or add `?connect=` and the ticket to the button’s callback_url', schema: { type: 'object', required: ['connect', 'url'], properties: { connect: { type: 'string' }, url: { type: 'string' } } } },
        404: { description: 'No such installation' },
      },
    },
    async ({ caller, params }) => {
      const installation = (await installations.getMany([params.id!])).get(params.id!);
      if (!installation || installation.status === 'deleted') throw notFound('installation');
      requireMember(caller, installation.target.org, 'installation');
      const connect = oauthStates.issue(installation.id, 'connect');
      return { status: 200, body: { connect, url: `${publicEndpoint(baseUrl, installation.integration, installation.id)}/oauth?connect=${encodeURIComponent(connect)}` } };
    },
  );
  routes.add<{ connect: string }>(
    {
      method: 'post',
      path: '/v1/installations/:id/oauth/state',
      summary: 'Spend a connection ticket for an OAuth state bound to the installation (its own token only; 10 minutes, single use)',
      access: 'member',
      installation: true,
      body: { type: 'object', required: ['connect'], additionalProperties: false, properties: { connect: { type: 'string', maxLength: 2048 } } },
      responses: { 200: { description: '{state}' }, 400: { description: 'The connection ticket is refused, with why' }, 404: { description: 'Not this installation’s token' } },
    },
    async ({ caller, params, body }) => {
      own(caller, params.id!);
      await spend(body.connect, 'connect', params.id!, 'connect');
      return { status: 200, body: { state: oauthStates.issue(params.id!, 'state') } };
    },
  );
  routes.add<{ state: string }>(
    {
      method: 'post',
      path: '/v1/installations/:id/oauth/state/verify',
      summary: 'Spend an OAuth state: 204 once for a good one, 400 for a forged, foreign, expired or replayed one',
      access: 'member',
      installation: true,
      body: { type: 'object', required: ['state'], additionalProperties: false, properties: { state: { type: 'string', maxLength: 2048 } } },
      responses: { 204: { description: 'Good, and now spent' }, 400: { description: 'Refused, with why' } },
    },
    async ({ caller, params, body }) => {
      own(caller, params.id!);
      await spend(body.state, 'state', params.id!, 'state');
      return { status: 204 };
    },
  );
}

/** A JSON body, or undefined when it is none (an empty body is null). */
function jsonOf(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8') || 'null');
  } catch {
    return undefined;
  }
}
