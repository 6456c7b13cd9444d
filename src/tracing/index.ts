import { context, propagation, ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Link, type Span, type SpanOptions, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { PLATFORM_VERSION } from '../version';

/** The tracer of the provider registry in place, kept while that registry is. */
let kept: { provider: TracerProvider; tracer: Tracer } | undefined;

/**
 * The platform's own spans. Until startTracing registers a provider (tracing off) every
 * span is a no-op and nothing is propagated: no cost, no header. The tracer is taken anew
 * when the registry changes: one kept from a registry that shutdown replaced (trace.disable)
 * would still feed the provider shut down after a process starts tracing again.
 */
export const tracer = {
  startSpan(name: string, options?: SpanOptions, parent?: Context): Span {
    const provider = trace.getTracerProvider();
    if (kept?.provider !== provider) kept = { provider, tracer: provider.getTracer('integration-platform', PLATFORM_VERSION) };
    return kept.tracer.startSpan(name, options, parent);
  },
};

/** A process's tracing, when an OTLP endpoint is configured: the worker's workflow spans go to the same processor. */
export interface Tracing {
  resource: Resource;
  processor: SpanProcessor;
  /** Exports what is buffered; bounded, so that a collector that is away cannot hold up a stop. */
  shutdown(): Promise<void>;
}

const SHUTDOWN_MS = 2000;

/** Registers the process's tracer provider (AsyncLocalStorage context, W3C propagation) exporting over OTLP/HTTP. */
export function startTracing(options: { url?: string; serviceName: string }): Tracing | undefined {
  if (!options.url) return undefined;
  const resource = new Resource({ 'service.name': options.serviceName, 'service.version': PLATFORM_VERSION });
  const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: options.url }), { scheduledDelayMillis: 1000 });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register();
  return {
    resource,
    processor,
    async shutdown() {
      await Promise.race([provider.shutdown(), new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_MS).unref())]);
      // Back to no-ops: whatever runs in this process afterwards records and propagates nothing.
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/**
 * A span's W3C `traceparent`, to carry with work that leaves the process as data (a
 * delivery handed to its shard); undefined when tracing is off.
 */
export function traceparentOf(span: Span): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
  return carrier.traceparent;
}

/** The active context's `traceparent` (a request's span), if any. */
export function activeTraceparent(): string | undefined {
  return injectTraceHeaders({}).traceparent;
}

/** The context a carried `traceparent` names, to start a child span in. */
export function contextOf(traceparent: string | undefined): Context | undefined {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : undefined;
}

/** Links from batched work to each item's span: one event's trace leads to the batch that carried it. */
export function linksTo(traceparents: (string | undefined)[]): Link[] {
  const links: Link[] = [];
  for (const traceparent of new Set(traceparents)) {
    const spanContext = traceparent ? trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent })) : undefined;
    if (spanContext) links.push({ context: spanContext });
  }
  return links;
}

/** Adds the active context's `traceparent` (and `tracestate`) to outgoing headers. */
export function injectTraceHeaders(headers: Record<string, string>): Record<string, string> {
  propagation.inject(context.active(), headers);
  return headers;
}

/** Runs `work` in a span that ends with it, marked as an error if it throws. */
export async function inSpan<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await context.with(trace.setSpan(context.active(), span), work);
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}
