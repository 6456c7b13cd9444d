import * as wf from '@temporalio/workflow';
import { commitVersionUpdate, integrationPublishedSignal, integrationQuery, REGISTRY_WORKFLOW_ID, registryQuery, reserveVersionUpdate, versionQuery, type IntegrationListing, type IntegrationState, type IntegrationVersion } from '../contracts/integration';
import { HistoryBudget } from './continue-as-new';
import { conflict } from '../contracts/failures';

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
