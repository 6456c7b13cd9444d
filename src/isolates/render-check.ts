import { INSPECTION_LIMITS } from './inspect-script';
import { envelope } from './integration-runtime';
import { INVOCATION_HEADER, RUNTIME_HOST_SOURCE, RUNTIME_PRELUDE_SOURCE } from './runtime-host';
import { takeSend } from './logs-binding';
import { WorkerdProcess, WorkerdStartError, type NodeService } from './workerd-process';

/** A component whose first render failed: what it answered, and the stack its log gave. */
export interface RenderFailure {
  componentId: string;
  message: string;
  /** Refused on purpose (an ExposableError, a 4xx): a block that needs props it is only ever created with (link unfurl). */
  refused?: boolean;
  /** The error's stack as the isolate wrote it, positions in the bundle (`integration.js:line:column`). */
  stack?: string;
}

/** How long the log of a failed render is waited for after its answer (the host sends it right after). */
const LOG_WAIT_MS = 2000;

/**
 * Renders each component once, as a block is when first inserted (no props, no state), in
 * a workerd isolate run as the platform runs one (the same host and prelude), without
 * network or the platform API, within the inspection's 2 s and 128 MiB a render. The
 * environment is the caller's (a stand-in installation). Answers the renders that failed,
 * those refused on purpose (4xx) marked so.
 */
export async function renderEachComponent(bundle: string, componentIds: string[], environment: object): Promise<RenderFailure[]> {
  const errors: string[] = [];
  let heard = () => {};
  // The isolate's log, to learn a failed render's stack: lines are data, read as JSON.
  const logs: NodeService = (req, res) =>
    takeSend(req, res, (body) => {
      const { lines } = (body ?? {}) as { lines?: { level?: unknown; message?: unknown }[] };
      for (const line of Array.isArray(lines) ? lines : []) if (line?.level === 'error' && typeof line.message === 'string') errors.push(line.message);
      heard();
    });
  let isolate: WorkerdProcess;
  try {
    isolate = await WorkerdProcess.start({
      modules: [
        { name: 'host.js', type: 'ESModule', contents: RUNTIME_HOST_SOURCE },
        { name: 'prelude.js', type: 'ESModule', contents: RUNTIME_PRELUDE_SOURCE },
        { name: 'integration.js', type: 'ESModule', contents: bundle },
      ],
      memoryLimitBytes: INSPECTION_LIMITS.memoryBytes,
      bindings: { platformLogs: logs },
    });
  } catch (err) {
    if (err instanceof WorkerdStartError) return componentIds.map((componentId) => ({ componentId, message: `the script does not load: ${err.message}` }));
    throw err;
  }
  const failures: RenderFailure[] = [];
  try {
    for (const componentId of componentIds) {
      errors.length = 0;
      const logged = new Promise<void>((resolve) => {
        heard = resolve;
        setTimeout(resolve, LOG_WAIT_MS).unref();
      });
      const event = { type: 'ui_render', componentId, props: {}, context: { type: 'document' } };
      const { contentType, payload } = envelope(event, environment);
      let answer;
      try {
        answer = await isolate.call('/v1', { method: 'POST', headers: { 'content-type': contentType, [INVOCATION_HEADER]: JSON.stringify({ kind: 'component' }) }, body: payload }, INSPECTION_LIMITS.wallClockMs);
      } catch {
        failures.push({ componentId, message: isolate.endReason === 'memory' ? `used more than ${INSPECTION_LIMITS.memoryBytes / 1024 / 1024} MiB` : `did not answer within ${INSPECTION_LIMITS.wallClockMs / 1000} s` });
        break; // The process is gone with it.
      }
      if (answer.status === 200) continue;
      await logged;
      let message = `answered ${answer.status}`;
      try {
        const said = (JSON.parse(answer.body.toString('utf8')) as { error?: unknown }).error;
        if (typeof said === 'string' && said !== 'Internal server error') message = said;
      } catch {
        // Not the SDK's JSON: its status says enough.
      }
      const stack = errors.find((line) => /\bat\b/.test(line));
      failures.push({ componentId, message: stack ? stack.split('\n')[0]!.replace(/^answered 500: /, '') : message, ...(stack && { stack }), ...(answer.status < 500 && { refused: true }) });
    }
  } finally {
    await isolate.dispose();
  }
  return failures;
}
