import { build } from 'esbuild';
import path from 'node:path';

/**
 * Bundles an integration's script into one CommonJS file. `integration-platform/runtime`
 * resolves to this CLI's own copy, so a scaffolded integration builds with nothing
 * published to a registry.
 */
export async function bundleScript(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'cjs',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['main', 'module'],
    write: false,
    logLevel: 'silent',
    alias: { 'integration-platform/runtime': path.join(__dirname, '..', 'runtime', 'index.js') },
  });
  return result.outputFiles[0]!.text;
}
