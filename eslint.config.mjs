// The guards the Temporal samples use, run by `npm test` before the build: a promise no
// one awaits is an error, and workflow code (replayed deterministically in a sandbox)
// imports no Node built-in. And no file of the service or the bench passes 300 lines.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'examples/**', 'test/fixtures/**', 'bench-results/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser, parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: { '@typescript-eslint/no-floating-promises': 'error', 'no-control-regex': 'error' },
  },
  {
    files: ['src/**/*.ts', 'bench/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 300 }] },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['node:*', 'fs', 'path', 'os', 'crypto', 'http', 'https', 'net', 'child_process', 'worker_threads'], message: 'workflow code runs in a deterministic sandbox: no Node built-ins' }] }],
    },
  },
);
