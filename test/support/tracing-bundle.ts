import { WORKFLOW_TRACING_MODULE } from '../../src/tracing/temporal';
import { bundleWorkflows } from './bundle';

let bundle: Promise<string> | undefined;

/** The workflows with Temporal's OpenTelemetry interceptors, bundled once per test process that asks. */
export function tracingBundle(): Promise<string> {
  bundle ??= bundleWorkflows([WORKFLOW_TRACING_MODULE]);
  return bundle;
}
