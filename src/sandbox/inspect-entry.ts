/**
 * Runs inside a locked-down child process (see inspect-script.ts): evaluates an integration
 * bundle read from stdin and reports what its default export registers, as one JSON line.
 * Nothing of this process is handed into the context: `module`, `exports` and `console`
 * are made inside it, and only a string comes out, so no host object offers a way back.
 */
import vm from 'node:vm';

const PRELUDE = 'var module = { exports: {} }; var exports = module.exports; var console = { log() {}, warn() {}, error() {} };';
const REPORT = `(() => {
  const exported = module.exports && (module.exports.default || module.exports);
  if (!exported || exported.__platformIntegration !== true) return JSON.stringify({ ok: false, error: 'the default export does not come from createIntegration()' });
  const ids = Array.isArray(exported.componentIds) ? exported.componentIds.filter((id) => typeof id === 'string') : [];
  return JSON.stringify({ ok: true, componentIds: ids });
})()`;

function inspect(code: string): string {
  const context = vm.createContext({}, { codeGeneration: { strings: false, wasm: false } });
  try {
    vm.runInContext(PRELUDE, context);
    vm.runInContext(code, context, { timeout: 1000, filename: 'integration.js' });
    const report: unknown = vm.runInContext(REPORT, context, { timeout: 100 });
    return typeof report === 'string' ? report : JSON.stringify({ ok: false, error: 'the script could not be inspected' });
  } catch (err) {
    // Errors thrown by the script belong to its context's realm: read the message as data.
    const candidate = typeof err === 'object' && err !== null ? (err as { message?: unknown }).message : err;
    const message = typeof candidate === 'string' ? candidate : 'an exception';
    return JSON.stringify({ ok: false, error: `the script throws when loaded: ${String(message).slice(0, 200)}` });
  }
}

const chunks: Buffer[] = [];
process.stdin.on('data', (chunk: Buffer) => chunks.push(chunk));
process.stdin.on('end', () => process.stdout.write(`${inspect(Buffer.concat(chunks).toString('utf8'))}\n`));
