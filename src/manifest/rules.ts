import { unknownKeyMessage } from './did-you-mean';
import { imageInfo } from './images';
import type { Segment } from './source';
import { ASSET_LIMITS, INTERNAL_SCOPES } from './types';

export interface RuleIssue {
  path: Segment[];
  message: string;
  /** Point at the key rather than the value. */
  atKey?: boolean;
  warning?: boolean;
}

export interface RuleContext {
  /** Reads a file next to the manifest; undefined when it does not exist. Omitted: assets are not checked. */
  readFile?: (relativePath: string) => Uint8Array | undefined;
  /** Component ids the script registers; omitted: blocks are not checked against them. */
  componentIds?: readonly string[];
  /** The platform's own integrations may request internal scopes. */
  platformOwned?: boolean;
}

const COMMON_KEYS = ['type', 'title', 'description'];
const KEYS_BY_TYPE: Record<string, string[]> = {
  string: [...COMMON_KEYS, 'default', 'enum', 'completion_url'],
  number: [...COMMON_KEYS, 'default'],
  boolean: [...COMMON_KEYS, 'default'],
  button: [...COMMON_KEYS, 'button_text', 'callback_url'],
};

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function propertyRules(base: Segment[], definition: Record<string, unknown>): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const type = definition.type;
  if (typeof type !== 'string' || !KEYS_BY_TYPE[type]) return issues;
  for (const key of Object.keys(definition)) {
    if (KEYS_BY_TYPE[type]!.includes(key)) continue;
    const message = key === 'enum' ? `"enum" is only allowed on string properties, not on ${type}` : `${unknownKeyMessage(key, KEYS_BY_TYPE[type]!)} (a ${type} property takes ${KEYS_BY_TYPE[type]!.join(', ')})`;
    issues.push({ path: [...base, key], message, atKey: true });
  }
  const values = Array.isArray(definition.enum) ? definition.enum : undefined;
  if (type === 'string' && values) {
    values.forEach((value, i) => typeof value !== 'string' && issues.push({ path: [...base, 'enum', i], message: 'enum values must be strings' }));
  }
  if ('default' in definition && type !== 'button') {
    const value = definition.default;
    if (typeof value !== type || (type === 'number' && !Number.isFinite(value))) {
      issues.push({ path: [...base, 'default'], message: `must be a ${type}, the property's type` });
    } else if (values && !values.includes(value)) {
      issues.push({ path: [...base, 'default'], message: `must be one of the enum values: ${values.join(', ')}` });
    }
  }
  if (type === 'button') {
    for (const key of ['button_text', 'callback_url']) if (!(key in definition)) issues.push({ path: [...base, key], message: `is required for button properties` });
  }
  return issues;
}

function configurationRules(manifest: Record<string, unknown>, context: RuleContext): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const configurations = manifest.configurations;
  if (!isObject(configurations)) return issues;
  for (const [scope, configuration] of Object.entries(configurations)) {
    if (!isObject(configuration)) continue;
    // GitBook's configuration rendered by a component: instead of properties, never beside them.
    const rendered = typeof configuration.componentId === 'string';
    if (rendered === isObject(configuration.properties)) {
      issues.push({ path: ['configurations', scope], message: rendered ? 'takes properties or a componentId that renders it, not both' : 'needs properties, or a componentId that renders it', atKey: true });
    }
    if (rendered && context.componentIds && !context.componentIds.includes(configuration.componentId as string)) {
      issues.push({ path: ['configurations', scope, 'componentId'], message: `the script registers no component "${String(configuration.componentId)}"; it registers: ${context.componentIds.join(', ') || '(none)'}` });
    }
    if (!isObject(configuration.properties)) continue;
    const properties = configuration.properties;
    for (const [name, definition] of Object.entries(properties)) {
      if (isObject(definition)) issues.push(...propertyRules(['configurations', scope, 'properties', name], definition));
    }
    if (Array.isArray(configuration.required)) {
      configuration.required.forEach((name, i) => {
        if (typeof name !== 'string') return;
        // A required button (GitBook's OAuth connect) is met once its flow has stored credentials.
        if (!Object.prototype.hasOwnProperty.call(properties, name)) {
          issues.push({ path: ['configurations', scope, 'required', i], message: `names no property; properties: ${Object.keys(properties).join(', ') || '(none)'}` });
        }
      });
    }
  }
  return issues;
}

function scopeRules(manifest: Record<string, unknown>, context: RuleContext): RuleIssue[] {
  if (context.platformOwned || !Array.isArray(manifest.scopes)) return [];
  return manifest.scopes.flatMap((scope, i) => (INTERNAL_SCOPES.includes(scope as string) ? [{ path: ['scopes', i], message: `"${scope}" is reserved for the platform's own integrations` }] : []));
}

function assetRule(path: Segment[], file: unknown, context: RuleContext, preview: boolean): RuleIssue[] {
  if (typeof file !== 'string' || !context.readFile) return [];
  if (file.startsWith('/') || file.split(/[\\/]/).includes('..') || /^[a-z]+:/i.test(file)) return [{ path, message: 'must be a path to a local file next to the manifest' }];
  const bytes = context.readFile(file);
  if (!bytes) return [{ path, message: `file "${file}" not found next to the manifest` }];
  const info = imageInfo(bytes);
  if (!info) return [{ path, message: `"${file}" is not a PNG or JPEG image` }];
  const limit = preview ? ASSET_LIMITS.previewBytes : ASSET_LIMITS.iconBytes;
  if (bytes.length > limit) return [{ path, message: `"${file}" is ${Math.ceil(bytes.length / 1024)} KiB; ${preview ? 'a preview' : 'an icon'} is at most ${limit / 1024} KiB` }];
  if (preview && Math.abs(info.width / info.height - 2) > 0.01) {
    return [{ path, message: `"${file}" is ${info.width} x ${info.height}; previews should be 2:1 (1600 x 800 recommended)`, warning: true }];
  }
  return [];
}

function linkRules(manifest: Record<string, unknown>): RuleIssue[] {
  if (!Array.isArray(manifest.externalLinks)) return [];
  return manifest.externalLinks.flatMap((link, i) => {
    const url = isObject(link) ? link.url : undefined;
    if (typeof url !== 'string' || !url.startsWith('https://')) return [];
    try {
      return new URL(url).protocol === 'https:' && !/\s/.test(url) ? [] : [{ path: ['externalLinks', i, 'url'], message: 'must be an https:// URL' }];
    } catch {
      return [{ path: ['externalLinks', i, 'url'], message: 'is not a valid URL' }];
    }
  });
}

function blockRules(manifest: Record<string, unknown>, context: RuleContext): RuleIssue[] {
  if (!Array.isArray(manifest.blocks)) return [];
  const issues: RuleIssue[] = [];
  const seen = new Set<string>();
  manifest.blocks.forEach((block, i) => {
    if (!isObject(block) || typeof block.id !== 'string') return;
    if (seen.has(block.id)) issues.push({ path: ['blocks', i, 'id'], message: `"${block.id}" is listed twice` });
    seen.add(block.id);
    if (context.componentIds && !context.componentIds.includes(block.id)) {
      issues.push({ path: ['blocks', i, 'id'], message: `the script registers no component "${block.id}"; it registers: ${context.componentIds.join(', ') || '(none)'}` });
    }
    issues.push(...assetRule(['blocks', i, 'icon'], block.icon, context, false));
  });
  return issues;
}

/** SPEC.md's rules that a JSON Schema cannot express. */
export function manifestRules(manifest: Record<string, unknown>, context: RuleContext): RuleIssue[] {
  return [
    ...scopeRules(manifest, context),
    ...configurationRules(manifest, context),
    ...blockRules(manifest, context),
    ...linkRules(manifest),
    ...assetRule(['icon'], manifest.icon, context, false),
    ...(Array.isArray(manifest.previewImages) ? manifest.previewImages.flatMap((file, i) => assetRule(['previewImages', i], file, context, true)) : []),
  ];
}
