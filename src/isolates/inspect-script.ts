import Ajv from 'ajv';
import { INSPECTOR_SOURCE, MAX_COMPONENTS } from './inspector-module';
import { WorkerdProcess, WorkerdStartError } from './workerd-process';
import { Semaphore } from './semaphore';

export type ScriptInspection = { ok: true; componentIds: string[]; eventTypes: string[] } | { ok: false; error: string };

/** The script's own time and memory at publish (the isolate's start is not counted). */
export const INSPECTION_LIMITS = { wallClockMs: 2000, memoryBytes: 128 * 1024 * 1024 };
const MAX_REPORT_BYTES = 64 * 1024;

/** Inspections at once: each is a workerd process of its own, and this machine has few cores. */
const slots = new Semaphore(2);

const validateReport = new Ajv({ strict: true }).compile({
  oneOf: [
    {
      type: 'object',
      required: ['ok', 'componentIds', 'eventTypes'],
      additionalProperties: false,
      properties: {
        ok: { const: true },
        componentIds: { type: 'array', maxItems: MAX_COMPONENTS, items: { type: 'string', maxLength: 200 } },
        eventTypes: { type: 'array', maxItems: MAX_COMPONENTS, items: { type: 'string', maxLength: 200 } },
      },
    },
    {
      type: 'object',
      required: ['ok', 'kind', 'error'],
      additionalProperties: false,
      properties: { ok: { const: false }, kind: { enum: ['throws', 'not_integration', 'too_many'] }, error: { type: 'string' } },
    },
  ],
});
type Report = { ok: true; componentIds: string[]; eventTypes: string[] } | { ok: false; kind: 'throws' | 'not_integration' | 'too_many'; error: string };

const NOT_AN_INTEGRATION = 'the default export does not come from createIntegration()';

/**
 * Loads an integration bundle (an ES module) in a workerd isolate of its own, with no
 * network, 2 s and 128 MiB, to learn which components it registers. Nothing of the
 * bundle runs in a Node context: the report is computed inside the isolate by platform
 * code (see inspector-module.ts) and checked here against a schema.
 */
export function inspectScript(bundle: string): Promise<ScriptInspection> {
  return slots.run(() => inspectOnce(bundle));
}

async function inspectOnce(bundle: string): Promise<ScriptInspection> {
  let isolate: WorkerdProcess;
  try {
    isolate = await WorkerdProcess.start({
      modules: [
        { name: 'inspector.js', type: 'ESModule', contents: INSPECTOR_SOURCE },
        { name: 'integration.js', type: 'ESModule', contents: bundle },
      ],
      memoryLimitBytes: INSPECTION_LIMITS.memoryBytes,
    });
  } catch (err) {
    if (err instanceof WorkerdStartError) return { ok: false, error: `the script does not load: ${err.message}` };
    throw err;
  }
  try {
    const response = await isolate.call('/', {}, INSPECTION_LIMITS.wallClockMs);
    const text = response.body.toString('utf8');
    let report: unknown;
    try {
      report = text.length <= MAX_REPORT_BYTES ? JSON.parse(text) : undefined;
    } catch {
      report = undefined;
    }
    if (response.status !== 200 || !validateReport(report)) return { ok: false, error: 'the script could not be inspected' };
    return explain(report as Report);
  } catch (err) {
    if (isolate.endReason === 'deadline') return { ok: false, error: `the script did not finish loading within ${INSPECTION_LIMITS.wallClockMs / 1000} s` };
    if (isolate.endReason === 'memory') return { ok: false, error: `the script used more than ${INSPECTION_LIMITS.memoryBytes / 1024 / 1024} MiB while loading` };
    if (isolate.endReason === 'crashed' || !isolate.alive) return { ok: false, error: 'the script crashed the isolate while loading' };
    throw err;
  } finally {
    await isolate.dispose();
  }
}

function explain(report: Report): ScriptInspection {
  if (report.ok) return report;
  if (report.kind === 'not_integration') return { ok: false, error: NOT_AN_INTEGRATION };
  if (report.kind === 'too_many') return { ok: false, error: `the script registers more than ${MAX_COMPONENTS} components or event handlers` };
  const message = report.error.slice(0, 1000);
  // A CommonJS bundle (the CLI made them before ES modules) fails on these first.
  const hint = /^(module|exports|require) is not defined$/.test(message) ? ' (integration bundles are ES modules: bundle and publish again with the current `platform` CLI)' : '';
  return { ok: false, error: `the script throws when loaded: ${message}${hint}` };
}
