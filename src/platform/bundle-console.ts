import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { CONSOLE_DIST } from '../api/console-pages';

/**
 * `npm run build`'s step for the web console: web/console.tsx (Preact, type-checked by
 * `tsc -p web`) bundled into one script, with its page and style, into dist/web, which the
 * API serves (src/api/console-pages.ts). Nothing is fetched at run time: the service runs offline.
 */
async function main(): Promise<void> {
  const web = path.join(__dirname, '..', '..', '..', 'web');
  mkdirSync(CONSOLE_DIST, { recursive: true });
  await build({ entryPoints: [path.join(web, 'console.tsx')], outfile: path.join(CONSOLE_DIST, 'console.js'), bundle: true, minify: true, format: 'esm', target: 'es2022', jsx: 'automatic', jsxImportSource: 'preact', legalComments: 'none', logLevel: 'warning' });
  for (const file of ['index.html', 'console.css']) copyFileSync(path.join(web, file), path.join(CONSOLE_DIST, file));
}

main().catch((err: Error) => {
  process.stderr.write(`bundling the console failed: ${err.message}\n`);
  process.exit(1);
});
