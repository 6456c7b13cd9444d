import type { ConfigurationSchema, PropertyDefinition } from '../manifest/types';

/**
 * Installation configurations checked against an integration's `configurations` schema
 * (SPEC.md). Pure code: installation workflows run it in their update validators.
 */
export type Configuration = Record<string, unknown>;

/** One broken rule, named by the configuration field it concerns. */
export interface FieldIssue {
  field: string;
  message: string;
  /** Where the field stands, for issues in a YAML file (the manifest). */
  line?: number;
  column?: number;
}

/** The schema's defaults: what a new installation's configuration starts from. */
export function defaultsOf(schema: ConfigurationSchema | undefined): Configuration {
  return Object.fromEntries(Object.entries(schema?.properties ?? {}).flatMap(([key, property]) => ('default' in property && property.default !== undefined ? [[key, property.default]] : [])));
}

/**
 * A patch sets properties; `null` unsets one. Wrong types, values outside an enum and
 * unknown properties are refused; missing required values are not (they keep the
 * installation pending).
 */
export function checkPatch(schema: ConfigurationSchema, patch: Configuration): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const properties = schema.properties ?? {};
  for (const [field, value] of Object.entries(patch)) {
    const definition = Object.prototype.hasOwnProperty.call(properties, field) ? properties[field] : undefined;
    // Rendered by a component, a configuration takes what its code stores.
    if (!definition && schema.componentId) continue;
    if (!definition) {
      issues.push({ field, message: `unknown property; known: ${Object.keys(properties).join(', ')}` });
      continue;
    }
    if (value === null) continue;
    const issue = checkValue(definition, value);
    if (issue) issues.push({ field, message: issue });
  }
  return issues;
}

function checkValue(definition: PropertyDefinition, value: unknown): string | undefined {
  switch (definition.type) {
    case 'string':
      if (typeof value !== 'string') return 'must be a string';
      if (definition.enum && !definition.enum.includes(value)) return `must be one of ${definition.enum.join(', ')}`;
      return undefined;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a number';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be a boolean';
    case 'button':
      return 'is a button and holds no value';
  }
}

export function applyPatch(configuration: Configuration, patch: Configuration): Configuration {
  const next = { ...configuration };
  for (const [field, value] of Object.entries(patch)) {
    if (value === null) delete next[field];
    else next[field] = value;
  }
  return next;
}

/**
 * Required properties that hold no value (an empty string counts as none). A required
 * button (GitBook's OAuth "connect") holds one once its flow has stored credentials.
 */
export function missingRequired(schema: ConfigurationSchema, configuration: Configuration): string[] {
  const has = (field: string) => Object.prototype.hasOwnProperty.call(configuration, field);
  return (schema.required ?? []).filter((field) => (schema.properties?.[field]?.type === 'button' ? !credentialsStored(configuration) : !has(field) || configuration[field] === undefined || configuration[field] === ''));
}

function credentialsStored(configuration: Configuration): boolean {
  const credentials = configuration[OAUTH_CREDENTIALS];
  return typeof credentials === 'object' && credentials !== null && Object.keys(credentials).length > 0;
}

/** Where an integration's OAuth flow stores what the provider gave it (SPEC.md). */
export const OAUTH_CREDENTIALS = 'oauth_credentials';

/** What people and listings see of stored credentials: that they exist, not what they are. */
export function maskCredentials(configuration: Configuration): Configuration {
  const credentials = configuration[OAUTH_CREDENTIALS];
  if (typeof credentials !== 'object' || credentials === null) return configuration;
  return { ...configuration, [OAUTH_CREDENTIALS]: Object.fromEntries(Object.keys(credentials).map((key) => [key, '********'])) };
}
