/**
 * Runs inside a locked-down child process (see inspect-script.ts): evaluates an integration
 * bundle read from stdin and reports what its default export registers, as one JSON line.
 */
import vm from 'node:vm';

const INTEGRATION_BRAND = '__platformIntegration';

function inspect(code: string): { ok: true; componentIds: string[] } | { ok: false; error: string } {
  const module = { exports: {} as Record<string, unknown> };
  const context = vm.createContext({ module, exports: module.exports, console: { log() {}, warn() {}, error() {} } });
  try {
    vm.runInContext(code, context, { timeout: 1000, filename: 'integration.js' });
  } catch (err) {
    return { ok: false, error: `the script throws when loaded: ${err instanceof Error ? err.message : String(err)}` };
  }
  const exported = module.exports.default ?? module.exports;
  const integration = exported as { [INTEGRATION_BRAND]?: boolean; componentIds?: unknown } | undefined;
  if (!integration || integration[INTEGRATION_BRAND] !== true) return { ok: false, error: 'the default export does not come from createIntegration()' };
  const ids = Array.isArray(integration.componentIds) ? integration.componentIds.filter((id): id is string => typeof id === 'string') : [];
  return { ok: true, componentIds: ids };
}

const chunks: Buffer[] = [];
process.stdin.on('data', (chunk: Buffer) => chunks.push(chunk));
process.stdin.on('end', () => process.stdout.write(`${JSON.stringify(inspect(Buffer.concat(chunks).toString('utf8')))}\n`));
