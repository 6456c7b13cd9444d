import { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, OpenTelemetryWorkflowClientInterceptor, makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import type { Tracing } from '.';

/** The workflow side of Temporal's OpenTelemetry interceptors: bundled with the workflows when tracing is on. */
export const WORKFLOW_TRACING_MODULE = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** Client calls (start, signal, update) carry the caller's span to the workflow in their headers. */
export function tracingClientInterceptors(tracing: Tracing | undefined): WorkflowClientInterceptor[] {
  return tracing ? [new OpenTelemetryWorkflowClientInterceptor()] : [];
}

/**
 * A worker's part: activity spans continue the workflow's, and workflow spans (made in the
 * sandbox) leave through a sink to the process's span processor. `bundled`: the workflow
 * interceptors are in a prebuilt bundle already (its builder added WORKFLOW_TRACING_MODULE).
 */
export function tracingWorkerOptions(tracing: Tracing | undefined, bundled: boolean): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  if (!tracing) return {};
  return {
    interceptors: {
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
      ...(!bundled && { workflowModules: [WORKFLOW_TRACING_MODULE] }),
    },
    sinks: { exporter: makeWorkflowExporter(tracing.processor, tracing.resource) },
  };
}
