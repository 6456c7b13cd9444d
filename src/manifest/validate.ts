import Ajv, { type ErrorObject } from 'ajv';
import schema from '../../schema/platform-manifest.schema.json';
import { unknownKeyMessage } from './did-you-mean';
import { manifestRules, type RuleContext } from './rules';
import { formatPath, ManifestSource, type Segment } from './source';
import type { Manifest, ManifestIssue } from './types';

export { schema as manifestSchema };
export const MANIFEST_FILE = 'platform-manifest.yaml';
/** Past this many issues of one kind the rest would only repeat them; locating each has a cost. */
const MAX_ISSUES = 100;

const validateSchema = new Ajv({ allErrors: true, strict: true, verbose: true }).compile(schema);

export interface ManifestResult {
  /** Set only when there is no error. */
  manifest?: Manifest;
  errors: ManifestIssue[];
  warnings: ManifestIssue[];
}

function segmentsOf(instancePath: string): Segment[] {
  return instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

/** One schema error as a located issue, said in the manifest author's terms. */
function fromSchemaError(error: ErrorObject, source: ManifestSource): ManifestIssue {
  const path = segmentsOf(error.instancePath);
  let message = error.message ?? 'is invalid';
  let atKey = false;
  switch (error.keyword) {
    case 'required':
      path.push(String(error.params.missingProperty));
      message = 'is required';
      break;
    case 'additionalProperties':
      path.push(String(error.params.additionalProperty));
      message = unknownKeyMessage(String(error.params.additionalProperty), Object.keys((error.parentSchema as { properties?: object }).properties ?? {}));
      atKey = true;
      break;
    case 'enum':
      message = `must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`;
      break;
    case 'maxLength':
      message = `must be at most ${error.params.limit} characters`;
      break;
    case 'minLength':
      message = error.params.limit === 1 ? 'must not be empty' : `must be at least ${error.params.limit} characters`;
      break;
    case 'maxItems':
      message = `must have at most ${error.params.limit} entries`;
      break;
    case 'maxProperties':
      message = `must have at most ${error.params.limit} entries`;
      break;
    case 'pattern':
      message = patternMessage(path) ?? message;
      break;
    case 'propertyNames':
      return { path: formatPath([...path, String(error.params.propertyName)]), message: 'is not a valid name (letters, digits and _, not starting with a digit; not __proto__, constructor or prototype)', ...source.locate([...path, String(error.params.propertyName)], true) };
  }
  return { path: formatPath(path), message, ...source.locate(path, atKey) };
}

function patternMessage(path: Segment[]): string | undefined {
  const [top, , leaf] = path;
  if (top === 'name') return 'must be letters and digits in words joined by single hyphens (e.g. "my-integration")';
  if (top === 'secrets') return 'must be an environment substitution on one line: ${{ env.NAME }}, NAME of letters, digits and _ (at most 128, not __proto__, constructor or prototype); GitBook’s 1Password references (${{ "op://…" }}) are not read here: export the value and name its variable';
  if (top === 'externalLinks') return 'must be an https:// URL';
  if (top === 'blocks') return 'must be 1-64 letters, digits, _ or -';
  if (leaf === 'completion_url' || path.at(-1) === 'completion_url' || path.at(-1) === 'callback_url') return 'must be a path on the integration, starting with a single /';
  return undefined;
}

/**
 * The one manifest validation, run alike by the CLI (`platform check`) and the server
 * (publish): YAML syntax, the JSON Schema, then SPEC.md's other rules; every error at once,
 * each with its path, line and column.
 */
export function validateManifest(text: string, context: RuleContext = {}): ManifestResult {
  const source = new ManifestSource(text);
  if (source.doc.errors.length) {
    return {
      errors: source.doc.errors.map((error) => ({ path: '(yaml)', message: error.message.split('\n')[0]!, ...source.position(error.pos[0]) })),
      warnings: [],
    };
  }
  let value: unknown;
  try {
    value = source.doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // An alias bomb: refusing it costs nothing, expanding it could cost everything.
    return { errors: [{ path: '(yaml)', message: (err as Error).message, line: 1, column: 1 }], warnings: [] };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { errors: [{ path: '(root)', message: 'the manifest must be a YAML mapping of keys to values', line: 1, column: 1 }], warnings: [] };
  }
  const errors: ManifestIssue[] = [];
  const warnings: ManifestIssue[] = [];
  if (!validateSchema(value)) {
    // A bad name under propertyNames also fails its pattern: the propertyNames error says it better.
    const schemaErrors = (validateSchema.errors ?? []).filter((error) => !error.schemaPath.includes('/propertyNames/'));
    errors.push(...schemaErrors.slice(0, MAX_ISSUES).map((error) => fromSchemaError(error, source)));
  }
  for (const issue of manifestRules(value as Record<string, unknown>, context).slice(0, MAX_ISSUES)) {
    const located = { path: formatPath(issue.path), message: issue.message, ...source.locate(issue.path, issue.atKey) };
    (issue.warning ? warnings : errors).push(located);
  }
  const byPosition = (a: ManifestIssue, b: ManifestIssue) => a.line - b.line || a.column - b.column;
  errors.sort(byPosition);
  warnings.sort(byPosition);
  return { manifest: errors.length ? undefined : (value as Manifest), errors, warnings };
}
