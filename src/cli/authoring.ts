import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeDirectory } from '../make-directory';
import { createInterface } from 'node:readline/promises';
import { parse, stringify } from 'yaml';
import { MANIFEST_FILE, validateManifest } from '../manifest/validate';
import { MAX_SCRIPT_BYTES, type Manifest, type ManifestIssue } from '../manifest/types';
import { inspectScript } from '../isolates/inspect-script';
import { renderEachComponent, type RenderFailure } from '../isolates/render-check';
import { buildEnvironment } from '../isolates/environment';
import { defaultsOf } from '../installations/configuration';
import { SourceMapConsumer, type RawSourceMap } from 'source-map-js';
import type { ApiClient } from './api-client';
import { CliError } from './api-client';
import { bundleWithSourceMap, isOwnRuntime } from './bundle';
import { scaffoldFiles } from './scaffold';

export interface Terminal {
  print: (text: string) => void;
  progress: (text: string) => void;
  interactive: boolean;
}

const NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;

export async function newIntegration(terminal: Terminal, cwd: string, name: string | undefined, organization: string | undefined): Promise<void> {
  if (!name) throw new CliError('missing <name>', 'platform new <name> [--organization <org>]', 2);
  if (!NAME.test(name) || name.length > 64) throw new CliError(`"${name}" is not a valid integration name`, 'use lowercase letters and digits joined by single hyphens, e.g. my-integration', 2);
  const dir = path.resolve(cwd, name);
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new CliError(`${dir} exists and is not empty`, 'pick another name or remove that directory');
  let org = organization;
  if (!org && terminal.interactive) {
    const prompt = createInterface({ input: process.stdin, output: process.stderr });
    org = (await prompt.question('Organization (id or subdomain): ')).trim();
    prompt.close();
  }
  if (!org) throw new CliError('no organization given', 'pass --organization <id or subdomain>', 2);
  for (const [file, content] of Object.entries(scaffoldFiles(name, org))) {
    makeDirectory(path.dirname(path.join(dir, file)), 'platform new');
    writeFileSync(path.join(dir, file), content);
  }
  terminal.print(`Created ${path.relative(cwd, dir) || '.'}/ with ${Object.keys(scaffoldFiles(name, org)).join(', ')}\nNext: cd ${name} && platform check`);
}

export interface CheckedIntegration {
  dir: string;
  manifestText: string;
  manifest: Manifest;
  bundle?: string;
  /** The bundle's source map (positions only, no sources). */
  sourceMap?: string;
  componentIds: string[];
  warnings: ManifestIssue[];
}

const located = (file: string, issue: { line: number; column: number; path: string; message: string }, kind = '') => `${file}:${issue.line}:${issue.column} ${kind}${issue.path === '(yaml)' || issue.path === '(root)' ? '' : `${issue.path}: `}${issue.message}`;

/**
 * The manifest with `envs.<name>` merged over it (GitBook's environments: another
 * organization, other secrets, say), as the text the server validates; the positions of
 * problems are then those of that text, which the CLI names.
 */
function manifestForEnv(text: string, name: string): string {
  let manifest: Record<string, unknown> | null;
  try {
    manifest = parse(text) as Record<string, unknown> | null;
  } catch {
    return text; // The validation reports the YAML error with its position.
  }
  const envs = (manifest?.envs ?? {}) as Record<string, Record<string, unknown>>;
  if (!Object.prototype.hasOwnProperty.call(envs, name)) throw new CliError(`${MANIFEST_FILE} has no envs.${name}`, `its environments: ${Object.keys(envs).join(', ') || '(none)'}`, 2);
  const { envs: _envs, ...base } = manifest!;
  return stringify({ ...base, ...envs[name] });
}

/**
 * The server's own validation, run locally: the manifest (with an environment's part
 * merged over it), then the script bundled and loaded the way the platform will load it.
 * Errors are printed as `file:line:col message`.
 */
export async function checkIntegration(terminal: Terminal, dirArg = '.', env?: string): Promise<CheckedIntegration> {
  const dir = path.resolve(dirArg);
  const manifestPath = path.join(dir, MANIFEST_FILE);
  if (!existsSync(manifestPath)) throw new CliError(`no ${MANIFEST_FILE} in ${dir}`, 'run it in an integration directory, or create one with platform new <name>');
  const manifestText = env === undefined ? readFileSync(manifestPath, 'utf8') : manifestForEnv(readFileSync(manifestPath, 'utf8'), env);
  const manifestName = env === undefined ? MANIFEST_FILE : `${MANIFEST_FILE} (with envs.${env} merged)`;
  let script: unknown;
  try {
    script = (parse(manifestText) as { script?: unknown } | null)?.script;
  } catch {
    script = undefined; // The validation below reports the YAML error with its position.
  }
  let bundle: string | undefined;
  let sourceMap: string | undefined;
  let componentIds: string[] = [];
  const scriptErrors: string[] = [];
  if (typeof script === 'string' && script) {
    terminal.progress(`Bundling ${script}…`);
    const entry = path.join(dir, script);
    if (!existsSync(entry)) scriptErrors.push(`${MANIFEST_FILE}: script ${script} does not exist`);
    else {
      try {
        ({ code: bundle, map: sourceMap } = await bundleWithSourceMap(entry, dir));
      } catch (err) {
        const errors = (err as { errors?: { text: string; location?: { file: string; line: number; column: number } }[] }).errors ?? [];
        scriptErrors.push(...(errors.length ? errors.map((e) => `${e.location ? `${e.location.file}:${e.location.line}:${e.location.column + 1} ` : ''}${e.text}`) : [(err as Error).message]));
      }
    }
    if (bundle && Buffer.byteLength(bundle) > MAX_SCRIPT_BYTES) scriptErrors.push(`${script}: the bundle is ${Buffer.byteLength(bundle)} bytes; the platform accepts at most ${MAX_SCRIPT_BYTES} (1 MiB)`);
    if (bundle) {
      const inspection = await inspectScript(bundle);
      if (inspection.ok) componentIds = inspection.componentIds;
      else scriptErrors.push(`${script}: ${inspection.error}`);
    }
  }
  const readFile = (file: string) => (existsSync(path.join(dir, file)) ? readFileSync(path.join(dir, file)) : undefined);
  const result = validateManifest(manifestText, { readFile, componentIds: bundle ? componentIds : undefined });
  for (const warning of result.warnings) terminal.print(located(manifestName, warning, 'warning: '));
  const errors = [...result.errors.map((issue) => located(manifestName, issue)), ...scriptErrors];
  if (!errors.length && result.manifest && bundle && componentIds.length) {
    terminal.progress(`Rendering ${componentIds.length} component(s)…`);
    for (const failure of await renderEachComponent(bundle, componentIds, checkEnvironment(result.manifest))) {
      if (failure.refused) terminal.progress(`note: component "${failure.componentId}" refuses to render with no props (${failure.message}); fine for a block only ever created with them, by link unfurl say`);
      else errors.push(renderError(failure, sourceMap!, dir, script as string));
    }
  }
  if (errors.length || !result.manifest) throw new CliError(`${errors.join('\n')}\n${errors.length} error(s)`, `fix them and run platform check again`);
  return { dir, manifestText, manifest: result.manifest, bundle, sourceMap, componentIds, warnings: result.warnings };
}

/** `${{ env.NAME }}` of each listed secret, read from this process's environment; nothing else is read. */
export function substituteSecrets(manifest: Manifest, env: NodeJS.ProcessEnv): Record<string, string> {
  const values: Record<string, string> = {};
  const missing: string[] = [];
  for (const [secret, reference] of Object.entries(manifest.secrets ?? {})) {
    const variable = /env\.([A-Za-z_][A-Za-z0-9_]*)/.exec(reference)![1]!;
    const value = env[variable];
    // CI systems pass an undefined secret as an empty string: that is no value either.
    if (value === undefined) missing.push(`secret ${secret} needs the environment variable ${variable}, which is not set`);
    else if (value === '') missing.push(`secret ${secret} needs the environment variable ${variable}, which is empty`);
    else values[secret] = value;
  }
  if (missing.length) throw new CliError(missing.join('\n'), 'export the variables, then publish again');
  return values;
}

export async function publishIntegration(terminal: Terminal, api: ApiClient, env: NodeJS.ProcessEnv, dirArg = '.', manifestEnv?: string): Promise<{ name: string; version: number }> {
  terminal.progress('Checking…');
  const checked = await checkIntegration(terminal, dirArg, manifestEnv);
  terminal.progress(`Uploading ${checked.manifest.name} to ${api.baseUrl}…`);
  const published = await upload(api, env, checked, false);
  terminal.print(`Published ${published.name} version ${published.version}\nInstall it: platform install ${published.name} --org ${checked.manifest.organization}`);
  return published;
}

/** A checked integration sent to the API with its secrets (from this environment) and images: a version, or a development version. */
export async function upload(api: ApiClient, env: NodeJS.ProcessEnv, checked: CheckedIntegration, dev: boolean): Promise<{ name: string; version: number }> {
  const secrets = substituteSecrets(checked.manifest, env);
  const files = [checked.manifest.icon, ...(checked.manifest.previewImages ?? []), ...(checked.manifest.blocks ?? []).map((block) => block.icon)].filter((file): file is string => typeof file === 'string');
  const assets = Object.fromEntries(files.map((file) => [file, readFileSync(path.join(checked.dir, file)).toString('base64')]));
  return api.request<{ name: string; version: number }>('POST', '/v1/integrations', { manifest: checked.manifestText, script: checked.bundle ?? '', ...(checked.sourceMap && { sourceMap: checked.sourceMap }), assets, secrets, ...(dev && { dev: true }) });
}

/** What a component's first render gets at check time: an installation of the manifest's organization, configured with its defaults. */
function checkEnvironment(manifest: Manifest): object {
  const configuration = defaultsOf(manifest.configurations?.account);
  const now = new Date().toISOString();
  const installation = { id: 'ins_check', integration: manifest.name, target: { org: manifest.organization }, status: 'active' as const, events: [], createdAt: now, updatedAt: now, revision: 0, scopes: manifest.scopes ?? [], configuration, signingSecrets: [] };
  return buildEnvironment(installation, { name: manifest.name, version: 0, secrets: {} }, 'http://localhost:8080', 'itk_check');
}

/** A failed render as `file:line:col component "x" …: message`, its place the first frame of the integration's own sources. */
function renderError(failure: RenderFailure, sourceMap: string, dir: string, script: string): string {
  const what = `component "${failure.componentId}" fails when rendered with no props, as a block is when first inserted: ${failure.message}`;
  const consumer = new SourceMapConsumer(JSON.parse(sourceMap) as RawSourceMap);
  for (const [, line, column] of failure.stack?.matchAll(/integration\.js:(\d+):(\d+)/g) ?? []) {
    const original = consumer.originalPositionFor({ line: Number(line), column: Number(column) - 1 });
    if (original.source && !original.source.includes('node_modules') && !isOwnRuntime(dir, original.source)) return `${original.source}:${original.line}:${(original.column ?? 0) + 1} ${what}`;
  }
  return `${script}: ${what}`;
}
