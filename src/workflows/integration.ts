import * as wf from '@temporalio/workflow';
import type { Manifest, Visibility } from '../manifest/types';
import { HistoryBudget } from './continue-as-new';
import { conflict } from './errors';

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

/** A published version, kept as the input of a workflow that never ends. */
export async function integrationVersionWorkflow(version: IntegrationVersion): Promise<void> {
  wf.setHandler(versionQuery, () => version);
  await wf.condition(() => false);
}

/**
 * An integration as an entity workflow: its id keeps names unique across all
 * organizations, and only the owning organization publishes new versions.
 */
export async function integrationWorkflow(state: IntegrationState, historyLimit = 500): Promise<void> {
  const budget = new HistoryBudget(historyLimit);
  const registry = wf.getExternalWorkflowHandle(REGISTRY_WORKFLOW_ID);
  wf.setHandler(integrationQuery, () => state);
  // Numbers are handed out before any await, so concurrent publishes never share one.
  let reserved = state.summary?.latestVersion ?? 0;
  const ownerOnly = (ownerOrg: string) => {
    if (ownerOrg !== state.ownerOrg) throw conflict(`the name "${state.name}" is not available`);
  };
  wf.setHandler(
    reserveVersionUpdate,
    () => {
      budget.spend();
      reserved += 1;
      return reserved;
    },
    { validator: ownerOnly },
  );
  wf.setHandler(
    commitVersionUpdate,
    async (version, manifest, _ownerOrg, eventTypes, images) => {
      budget.spend();
      if (state.summary && state.summary.latestVersion >= version) return { name: state.name, version };
      const updatedAt = new Date().toISOString();
      state.summary = {
        name: state.name,
        ownerOrg: state.ownerOrg,
        visibility: manifest.visibility,
        latestVersion: version,
        title: manifest.title,
        description: manifest.description,
        summary: manifest.summary,
        scopes: manifest.scopes,
        ...(manifest.target && { target: manifest.target }),
        eventTypes,
        categories: manifest.categories,
        blocks: manifest.blocks,
        externalLinks: manifest.externalLinks,
        configurations: manifest.configurations,
        ...(images && { images }),
        updatedAt,
      };
      const { name, ownerOrg, visibility, latestVersion, title, description, categories } = state.summary;
      await registry.signal(integrationPublishedSignal, { name, ownerOrg, visibility, latestVersion, title, description, categories, updatedAt });
      return { name, version };
    },
    {
      validator: (version, _manifest, ownerOrg, _eventTypes, _images) => {
        ownerOnly(ownerOrg);
        if (!Number.isInteger(version) || version < 1 || version > reserved) throw conflict(`version ${version} was never reserved`);
      },
    },
  );
  await wf.condition(() => budget.exhausted());
  await budget.drained();
  await wf.continueAsNew<typeof integrationWorkflow>(state, historyLimit);
}

/** Every integration's summary, for listings: one consistent query. */
export async function registryWorkflow(integrations: Record<string, IntegrationListing> = {}, historyLimit = 2000): Promise<void> {
  const budget = new HistoryBudget(historyLimit);
  wf.setHandler(integrationPublishedSignal, (summary) => {
    budget.spend();
    const known = integrations[summary.name];
    if (!known || known.latestVersion < summary.latestVersion) integrations[summary.name] = summary;
  });
  wf.setHandler(registryQuery, () => Object.values(integrations));
  await wf.condition(() => budget.exhausted());
  await budget.drained();
  await wf.continueAsNew<typeof registryWorkflow>(integrations, historyLimit);
}
