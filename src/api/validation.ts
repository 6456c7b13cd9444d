import Ajv, { type ErrorObject, type SchemaObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FieldIssue } from '../installations/configuration';
import { badRequest } from './errors';

const ajv = new Ajv({ allErrors: true, strict: true });
addFormats(ajv);
const compiled = new WeakMap<SchemaObject, ValidateFunction>();

/** `/visitor/ip` -> `visitor.ip`; a missing or unknown property is named itself. */
function fieldOf(error: ErrorObject, prefix: string): string {
  const parts = error.instancePath.split('/').filter(Boolean);
  if (error.keyword === 'required') parts.push(String(error.params.missingProperty));
  if (error.keyword === 'additionalProperties') parts.push(String(error.params.additionalProperty));
  return [prefix, ...parts].filter(Boolean).join('.') || '(body)';
}

function messageOf(error: ErrorObject): string {
  if (error.keyword === 'required') return 'is required';
  if (error.keyword === 'additionalProperties') return 'is not a known field';
  return error.message ?? 'is invalid';
}

export function issuesOf(errors: ErrorObject[] | null | undefined, prefix = ''): FieldIssue[] {
  return (errors ?? []).map((error) => ({ field: fieldOf(error, prefix), message: messageOf(error) }));
}

const dateTime = ajv.compile({ type: 'string', format: 'date-time' });
/** An RFC 3339 time with its offset, as bodies' `format: date-time` takes it (queries too). */
export const isDateTime = (value: string): boolean => dateTime(value);

/** Parses external input by its JSON Schema or throws a 400 naming every broken field (under `prefix`, for an item of a list). */
export function parse<T>(schema: SchemaObject, value: unknown, what = 'request body', prefix = ''): T {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (!validate(value)) {
    const issues = issuesOf(validate.errors, prefix);
    throw badRequest(`invalid ${what}: ${issues.map((issue) => `${issue.field} ${issue.message}`).join('; ')}`, issues);
  }
  return value as T;
}
