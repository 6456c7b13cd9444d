import { build, type Plugin } from 'esbuild';
import path from 'node:path';

const RUNTIME = path.join(__dirname, '..', 'runtime');

/** Whether a source of a bundle's map (relative to `root`) is this CLI's own runtime, not the integration's code. */
export const isOwnRuntime = (root: string, source: string): boolean => path.resolve(root, source).startsWith(`${RUNTIME}${path.sep}`);

/**
 * `integration-platform/runtime` (and its JSX runtime) resolve to this CLI's own copy, so a
 * scaffolded integration builds with nothing published to a registry; so does
 * `@gitbook/runtime`, which a ported integration's tsconfig may still name as its
 * `jsxImportSource`.
 */
/** Marks the resolve that looks for the integration's own `@gitbook/api`. */
const OWN_COPY = Symbol('the integration’s own copy');

const ownRuntime: Plugin = {
  name: 'own-runtime',
  setup(build) {
    build.onResolve({ filter: /^(integration-platform|@gitbook)\/runtime(\/jsx-(dev-)?runtime)?$/ }, (args) => ({
      path: path.join(RUNTIME, args.path.includes('/jsx-') ? 'jsx-runtime.js' : 'index.js'),
    }));
    // `@gitbook/api`: the integration's own copy when it has one, else this runtime's stand-in (gitbook-api.ts).
    build.onResolve({ filter: /^@gitbook\/api$/ }, async (args) => {
      if (args.pluginData === OWN_COPY) return undefined;
      const own = await build.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, importer: args.importer, pluginData: OWN_COPY });
      return own.errors.length ? { path: path.join(RUNTIME, 'gitbook-api.js') } : { path: own.path };
    });
  },
};

/**
 * Bundles an integration's script into one ES module, the format workerd runs. JSX is
 * the automatic kind with this runtime as its source, unless the integration's tsconfig
 * says otherwise; `process.env.NODE_ENV` and GitBook's `MODE` are "production", as GitBook's CLI defines them;
 * packages resolve and files load as its bundler has them.
 */
export async function bundleScript(entry: string): Promise<string> {
  return (await bundleWithSourceMap(entry, path.dirname(entry))).code;
}

/** The bundle and its source map, whose sources are named relative to `root` (the integration's folder). */
export async function bundleWithSourceMap(entry: string, root: string): Promise<{ code: string; map: string }> {
  const result = await build({
    entryPoints: [entry],
    // Not written: it only names where the map's sources are relative to.
    outfile: path.join(root, 'integration.js'),
    sourcemap: 'external',
    // Positions only: the map goes to the platform (to name source lines in the log), the sources do not.
    sourcesContent: false,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    // Packages' worker and browser builds before their Node ones, as GitBook's CLI picks them
    // (a GraphQL client's node build pulls in node:http, which an isolate does not have).
    mainFields: ['worker', 'browser', 'module', 'jsnext', 'main'],
    conditions: ['workerd', 'worker', 'browser', 'import', 'production'],
    // `import script from './widget.raw.js'`: the file's text, as GitBook's CLI loads it.
    loader: { '.raw.js': 'text', '.raw.css': 'text' },
    write: false,
    logLevel: 'silent',
    jsx: 'automatic',
    jsxImportSource: 'integration-platform/runtime',
    define: { 'process.env.NODE_ENV': '"production"', MODE: '"production"' },
    // workerd's own modules (cloudflare:sockets) resolve in the isolate, not here.
    external: ['cloudflare:*', 'node:*'],
    plugins: [ownRuntime],
  });
  const file = (suffix: string) => result.outputFiles.find((output) => output.path.endsWith(suffix))!.text;
  return { code: file('integration.js'), map: file('integration.js.map') };
}
