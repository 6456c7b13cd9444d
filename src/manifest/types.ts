import type { ConfigurationSchema } from '../integrations/configuration';

export const VISIBILITIES = ['private', 'unlisted', 'public'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** The largest script bundle the platform accepts, checked by the CLI and the server alike. */
export const MAX_SCRIPT_BYTES = 1024 * 1024;

/** Scopes only the platform's own integrations may request (SPEC.md). */
export const INTERNAL_SCOPES = ['site:script:inject', 'site:script:cookies'];

export interface Block {
  id: string;
  title: string;
  description?: string;
}

/** A parsed, valid `platform-manifest.yaml`. */
export interface Manifest {
  name: string;
  title: string;
  description: string;
  summary?: string;
  organization: string;
  visibility: Visibility;
  scopes: string[];
  script?: string;
  blocks?: Block[];
  categories?: string[];
  icon?: string;
  previewImages?: string[];
  externalLinks?: { label: string; url: string }[];
  configurations?: { account?: ConfigurationSchema; site?: ConfigurationSchema };
  /** Secret name -> `${{ env.NAME }}`. */
  secrets?: Record<string, string>;
}

/** One broken rule, located in the YAML text. */
export interface ManifestIssue {
  path: string;
  message: string;
  line: number;
  column: number;
}
