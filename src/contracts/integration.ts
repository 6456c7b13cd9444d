import * as wf from '@temporalio/workflow';
import type { Manifest, Visibility } from '../manifest/types';

/**
 * What the integration workflows and their callers (the API, the isolates, rollouts)
 * agree on: the records, the ids, the updates, queries and signal. Callers import this,
 * never the workflows.
 */
/** One published version: immutable, held by a workflow of its own. */
export interface IntegrationVersion {
  name: string;
  version: number;
  manifest: Manifest;
  /** The bundle: one ES module. */
  script: string;
  /** The event types its default export handles, from the publish inspection. */
  eventTypes?: string[];
  /** Path next to the manifest -> base64: versions published before 2026-11-27; later ones have none here. */
  assets: Record<string, string>;
  /** Path next to the manifest -> the SHA-256 under which the asset store keeps it. */
  assetHashes?: Record<string, string>;
  /** The bundle's source map in the asset store, when the CLI sent one. */
  sourceMapHash?: string;
  /** Secret name -> value, substituted by the CLI at publish. */
  secrets: Record<string, string>;
  publishedAt: string;
  publishedBy: string;
  /** A development version (`platform dev`): never the latest; only its owners' own installations are pinned to it. */
  dev?: boolean;
}

/** What listings and installs need, without script, assets or secrets. */
export interface IntegrationSummary {
  name: string;
  ownerOrg: string;
  visibility: Visibility;
  latestVersion: number;
  title: string;
  description: string;
  summary?: string;
  scopes: string[];
  /** Event types the latest version handles. */
  eventTypes?: string[];
  categories?: string[];
  blocks?: Manifest['blocks'];
  /** Where it installs (GitBook's target); anywhere when absent. */
  target?: Manifest['target'];
  externalLinks?: Manifest['externalLinks'];
  configurations?: Manifest['configurations'];
  /** The latest version's images by hash (the asset store's): the API serves them at /v1/assets/<hash>. */
  images?: { icon?: string; previewImages?: string[] };
  updatedAt: string;
}

export interface IntegrationState {
  name: string;
  ownerOrg: string;
  installLinkToken: string;
  summary?: IntegrationSummary;
}

/** What the registry lists of each integration: small, whatever the manifest's size. */
export type IntegrationListing = Pick<IntegrationSummary, 'name' | 'ownerOrg' | 'visibility' | 'latestVersion' | 'title' | 'description' | 'categories' | 'updatedAt'>;

export const integrationWorkflowId = (name: string): string => `integration/${name}`;
export const integrationVersionWorkflowId = (name: string, version: number): string => `integration/${name}/v${version}`;
export const REGISTRY_WORKFLOW_ID = 'integrations';

/** Publishing is two steps around the API starting the version's workflow (too big for an update). */
export const reserveVersionUpdate = wf.defineUpdate<number, [string]>('reserveVersion');
/** `images` is absent in histories from before assets left the payloads. */
export const commitVersionUpdate = wf.defineUpdate<{ name: string; version: number }, [number, Manifest, string, string[], IntegrationSummary['images'] | undefined]>('commitVersion');
export const integrationQuery = wf.defineQuery<IntegrationState>('integration');
export const versionQuery = wf.defineQuery<IntegrationVersion>('version');
export const integrationPublishedSignal = wf.defineSignal<[IntegrationListing]>('integrationPublished');
export const registryQuery = wf.defineQuery<IntegrationListing[]>('registry');
