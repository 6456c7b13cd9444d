import { build } from 'esbuild';
import path from 'node:path';

/**
 * Bundles an integration's script into one ES module, the format workerd runs; imports
 * of the runtime's own modules stay imports.
 * `integration-platform/runtime` resolves to this CLI's own copy, so a scaffolded
 * integration builds with nothing published to a registry.
 */
export async function bundleScript(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    write: false,
    logLevel: 'silent',
    // workerd's own modules (cloudflare:sockets) resolve in the isolate, not here.
    external: ['cloudflare:*', 'node:*'],
    alias: { 'integration-platform/runtime': path.join(__dirname, '..', 'runtime', 'index.js') },
  });
  return result.outputFiles[0]!.text;
}
