import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Context, Next } from 'koa';
import { tracer } from '.';

/**
 * A request's path as logs and spans keep it: a delivery portal link's token (its path's
 * second segment) is a credential for days, and is not written out.
 */
export const recordedPath = (path: string): string => path.replace(/^\/portal\/[^/]+/, '/portal/<link>');

/**
 * A server span per request, continuing a caller's `traceparent`, named after the route
 * (not the path: ids would make every name unique) once the router matched one. Mounted
 * outermost, so that it sees the status the error middleware settled on.
 */
export async function traceRequests(ctx: Context, next: Next): Promise<void> {
  const parent = propagation.extract(context.active(), ctx.headers);
  const span = tracer.startSpan(ctx.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method, 'url.path': recordedPath(ctx.path) } }, parent);
  try {
    await context.with(trace.setSpan(parent, span), next);
  } finally {
    const route = (ctx as { _matchedRoute?: string })._matchedRoute;
    if (route) span.updateName(`${ctx.method} ${route}`).setAttribute('http.route', route);
    span.setAttribute('http.response.status_code', ctx.status);
    if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
}
