import { createPlatformApi, type PlatformBinding } from './api';
import { renderComponent, type ComponentDefinition } from './components';
import { errorResponse, ExposableError } from './errors';
import type { IntegrationContext } from './context';
import type { IntegrationDefinition } from './definition';
import type { FetchEvent, IntegrationEnvironment, IntegrationEvent, UIRenderEvent } from './types';

/** Envelope versions this SDK speaks (the public endpoint's `{version}`). */
export const ENVELOPE_VERSIONS = ['v1'];

/** What workerd hands the default export: the platform's bindings and the request's lifetime. */
export interface WorkerEnv {
  platformApi?: PlatformBinding;
}
export interface WorkerContext {
  waitUntil(promise: Promise<unknown>): void;
}

const json = (body: unknown, status = 200) => Response.json(body, { status });

async function readEnvelope(request: Request): Promise<{ event: IntegrationEvent; environment: IntegrationEnvironment; body?: Blob }> {
  let form: FormData;
  try {
    form = await request.formData();
  } catch {
    throw new ExposableError('the envelope must be multipart/form-data with event and environment parts');
  }
  const part = (name: string): unknown => {
    const value = form.get(name);
    if (typeof value !== 'string') throw new ExposableError(`the envelope lacks its ${name} part`);
    try {
      return JSON.parse(value);
    } catch {
      throw new ExposableError(`the envelope's ${name} part is not JSON`);
    }
  };
  const event = part('event') as IntegrationEvent;
  const environment = part('environment') as IntegrationEnvironment;
  if (typeof event !== 'object' || event === null || typeof event.type !== 'string') throw new ExposableError('the event has no type');
  const body = form.get('fetch-body');
  return { event, environment, body: body && typeof body !== 'string' ? body : undefined };
}

/**
 * The original request, rebuilt for the integration's fetch handler. The body goes without
 * its envelope part's type: a Request takes a Blob's type as its Content-Type when the
 * caller sent none, and the code would see one the caller never sent.
 */
function rebuild(event: FetchEvent, body: Blob | undefined): Request {
  const { method, url, headers } = event.request;
  return new Request(url, { method, headers, body: method === 'GET' || method === 'HEAD' ? undefined : body?.slice(0, body.size, '') });
}

/**
 * DESIGN.md §3: `POST /<version>` with the envelope; `fetch` -> the fetch handler (400 when
 * none), `ui_render` -> the component (404 when none), anything else -> `events[type]`
 * (406 when not handled). A thrown ExposableError answers its status; anything else 500,
 * never a stack.
 */
export async function handleEnvelope(definition: IntegrationDefinition, components: ComponentDefinition<any, any, any, any>[], request: Request, env: WorkerEnv | undefined, ctx: WorkerContext | undefined): Promise<Response> {
  try {
    const version = new URL(request.url).pathname.replace(/^\/+|\/+$/g, '');
    if (!ENVELOPE_VERSIONS.includes(version)) return json({ error: `unsupported envelope version "${version}"; this integration speaks ${ENVELOPE_VERSIONS.join(', ')}` }, 400);
    if (request.method !== 'POST') return json({ error: 'the envelope is POSTed' }, 405);
    const { event, environment, body } = await readEnvelope(request);
    const api = createPlatformApi(env?.platformApi, environment);
    const context: IntegrationContext = {
      environment,
      api,
      integration: { api, queueTask: () => Promise.reject(new ExposableError('context.integration.queueTask: integration tasks are GitBook’s, which this platform does not model', 501)) },
      waitUntil: (promise) => (ctx ? ctx.waitUntil(promise) : void promise.catch(() => undefined)),
    };
    if (event.type === 'fetch') {
      if (!definition.fetch) return json({ error: 'this integration handles no fetch requests' }, 400);
      return await definition.fetch(rebuild(event, body), context);
    }
    if (event.type === 'ui_render') {
      const render = event as UIRenderEvent;
      const component = components.find((candidate) => candidate.componentId === render.componentId);
      if (!component) return json({ error: `no component "${String(render.componentId)}"` }, 404);
      const { body, cache } = await renderComponent(component, render, context);
      return Response.json(body, cache ? { headers: { 'cache-control': `max-age=${Math.max(0, Math.floor(cache.maxAge))}` } } : undefined);
    }
    const handler = definition.events?.[event.type];
    if (!handler) return json({ error: `this integration does not handle ${event.type} events` }, 406);
    // GitBook's code may give several handlers for one type: all run.
    await Promise.all((Array.isArray(handler) ? handler : [handler]).map((each) => each(event as never, context)));
    return new Response(null, { status: 204 });
  } catch (error) {
    return errorResponse(error);
  }
}
