export const VISIBILITIES = ['private', 'unlisted', 'public'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** The largest script bundle the platform accepts, checked by the CLI and the server alike. */
export const MAX_SCRIPT_BYTES = 1024 * 1024;
/** Images a version publishes: an icon (the integration's, a block's) and a preview each at most GitBook's size, all of them together at most `totalBytes`. */
export const ASSET_LIMITS = { iconBytes: 256 * 1024, previewBytes: 1024 * 1024, totalBytes: 8 * 1024 * 1024 };

/** Scopes only the platform's own integrations may request (SPEC.md). */
export const INTERNAL_SCOPES = ['site:script:inject', 'site:script:cookies'];

export type PropertyDefinition =
  | { type: 'string'; title?: string; description?: string; default?: string; enum?: string[]; completion_url?: string }
  | { type: 'number'; title?: string; description?: string; default?: number }
  | { type: 'boolean'; title?: string; description?: string; default?: boolean }
  | { type: 'button'; title?: string; description?: string; button_text: string; callback_url: string };

/**
 * A manifest's configuration: properties (SPEC.md), or a component of the script that
 * renders it (GitBook's `componentId`), which takes any keys.
 */
export interface ConfigurationSchema {
  properties?: Record<string, PropertyDefinition>;
  required?: string[];
  componentId?: string;
}

export interface Block {
  id: string;
  title: string;
  description?: string;
  icon?: string;
  /** URL patterns whose links it unfurls (GitBook's). */
  urlUnfurl?: string[];
  /** The Markdown code block it stands for (GitBook's). */
  markdown?: { codeblock: string; body: string };
}

/** Where an integration installs (GitBook's `target`): space and site ones also on a whole organization. */
export const INTEGRATION_TARGETS = ['organization', 'space', 'site', 'all'] as const;
export type IntegrationTarget = (typeof INTEGRATION_TARGETS)[number];

/** A parsed, valid `platform-manifest.yaml`. */
export interface Manifest {
  name: string;
  title: string;
  description: string;
  summary?: string;
  organization: string;
  visibility: Visibility;
  scopes: string[];
  target?: IntegrationTarget;
  script?: string;
  blocks?: Block[];
  categories?: string[];
  icon?: string;
  previewImages?: string[];
  externalLinks?: { label: string; url: string }[];
  configurations?: { account?: ConfigurationSchema; space?: ConfigurationSchema; site?: ConfigurationSchema };
  /** Secret name -> `${{ env.NAME }}`. */
  secrets?: Record<string, string>;
  /** Parts of the manifest by environment name, merged over it by the CLI's `--env` (GitBook's). */
  envs?: Record<string, Record<string, unknown>>;
}

/** One broken rule, located in the YAML text. */
export interface ManifestIssue {
  path: string;
  message: string;
  line: number;
  column: number;
}
