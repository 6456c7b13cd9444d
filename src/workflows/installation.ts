import * as wf from '@temporalio/workflow';
import { applyPatch, type Configuration } from '../integrations/configuration';
import { checkInstallationPatch, configurationComplete, type ConfigurationSchemas } from '../integrations/installation-rules';
import { selectedEvents, type Target } from '../integrations/webhook';
import { HistoryBudget } from './continue-as-new';
import { invalid } from './errors';
import type { createActivities } from '../activities';
import type { InstallationProjection, InstallationStatus, SigningSecret } from '../delivery-log/types';

/** A rotated-out secret stays valid this long, and is signed with meanwhile (DESIGN.md §3). */
export const ROTATED_SECRET_VALIDITY_MS = 24 * 60 * 60 * 1000;

/** The read model's write: short, local, retried until the database takes it. */
const { saveInstallation } = wf.proxyLocalActivities<ReturnType<typeof createActivities>>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
});

export interface InstallationState {
  id: string;
  integration: string;
  /** The integration version installed; its configuration schemas apply. */
  version?: number;
  configurations?: ConfigurationSchemas;
  target: Target;
  configuration: Configuration;
  paused: boolean;
  deleted: boolean;
  createdAt: string;
  updatedAt: string;
  revision: number;
  /** Newest first. */
  signingSecrets: SigningSecret[];
}

/** What the API shows; secrets are never part of it. */
export interface InstallationView {
  id: string;
  integration: string;
  version?: number;
  target: Target;
  status: InstallationStatus;
  configuration: Configuration;
  createdAt: string;
  updatedAt: string;
}

export interface NewInstallation {
  id: string;
  integration: string;
  version?: number;
  configurations?: ConfigurationSchemas;
  target: Target;
  signingSecret: string;
}

export const installationWorkflowId = (id: string): string => `installation/${id}`;

export const configureUpdate = wf.defineUpdate<InstallationView, [Configuration]>('configure');
export const pauseUpdate = wf.defineUpdate<InstallationView>('pause');
export const resumeUpdate = wf.defineUpdate<InstallationView>('resume');
export const deleteUpdate = wf.defineUpdate<InstallationView>('delete');
/** The API generates the new secret: workflow randomness is deterministic, not secret. */
export const rotateSecretUpdate = wf.defineUpdate<SigningSecret, [string]>('rotateSecret');
export const installationQuery = wf.defineQuery<InstallationView>('installation');
export const signingSecretQuery = wf.defineQuery<SigningSecret>('signingSecret');

export function newInstallationState(input: NewInstallation, now: string): InstallationState {
  return {
    ...input,
    configuration: {},
    paused: false,
    deleted: false,
    createdAt: now,
    updatedAt: now,
    revision: 0,
    signingSecrets: [{ secret: input.signingSecret, createdAt: now }],
  };
}

function statusOf(state: InstallationState): InstallationStatus {
  if (state.deleted) return 'deleted';
  if (state.paused) return 'paused';
  return configurationComplete(state.integration, state.configurations, state.target, state.configuration) ? 'active' : 'pending';
}

function view(state: InstallationState): InstallationView {
  const { id, integration, version, target, configuration, createdAt, updatedAt } = state;
  return { id, integration, version, target, status: statusOf(state), configuration, createdAt, updatedAt };
}

function projection(state: InstallationState): InstallationProjection {
  const url = state.configuration.webhook_url;
  return {
    id: state.id,
    integration: state.integration,
    target: state.target,
    status: statusOf(state),
    events: selectedEvents(state.target, state.configuration),
    url: typeof url === 'string' ? url : undefined,
    createdAt: state.createdAt,
    updatedAt: state.updatedAt,
    revision: state.revision,
    signingSecrets: state.signingSecrets,
  };
}

/**
 * One installation as an entity workflow: every change is an update that validates before
 * it enters history, state is read with queries, and every change reaches the read model
 * in the delivery log's database before the update answers, so fan-out and attempts in
 * every process see it from the next event on.
 */
export async function installationWorkflow(state: InstallationState, historyLimit = 500): Promise<InstallationView> {
  const budget = new HistoryBudget(historyLimit);

  async function changed(): Promise<InstallationView> {
    state.revision += 1;
    state.updatedAt = new Date().toISOString();
    budget.spend();
    await saveInstallation(projection(state));
    return view(state);
  }
  const notDeleted = () => {
    if (state.deleted) throw invalid('the installation is deleted');
  };

  wf.setHandler(installationQuery, () => view(state));
  wf.setHandler(signingSecretQuery, () => state.signingSecrets[0]!);

  wf.setHandler(
    configureUpdate,
    (patch) => {
      state.configuration = applyPatch(state.configuration, patch);
      return changed();
    },
    {
      validator: (patch) => {
        notDeleted();
        if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw invalid('configuration must be an object');
        const issues = checkInstallationPatch(state.integration, state.configurations, state.target, patch);
        if (issues.length) throw invalid('invalid configuration', issues.map((issue) => ({ ...issue, field: `configuration.${issue.field}` })));
      },
    },
  );
  const flags = [
    [pauseUpdate, () => (state.paused = true)],
    [resumeUpdate, () => (state.paused = false)],
    [deleteUpdate, () => (state.deleted = true)],
  ] as const;
  for (const [update, apply] of flags) {
    wf.setHandler(
      update,
      () => {
        apply();
        return changed();
      },
      { validator: notDeleted },
    );
  }
  wf.setHandler(
    rotateSecretUpdate,
    async (secret) => {
      const now = Date.now();
      const expiresAt = new Date(now + ROTATED_SECRET_VALIDITY_MS).toISOString();
      const stillValid = state.signingSecrets.filter((old) => !old.expiresAt || Date.parse(old.expiresAt) > now);
      const fresh = { secret, createdAt: new Date(now).toISOString() };
      state.signingSecrets = [fresh, ...stillValid.map((old) => ({ ...old, expiresAt: old.expiresAt ?? expiresAt }))];
      await changed();
      return fresh;
    },
    {
      validator: (secret) => {
        notDeleted();
        if (typeof secret !== 'string' || secret.length < 24) throw invalid('signing secret too short');
      },
    },
  );

  if (state.revision === 0) await changed();
  await wf.condition(() => state.deleted || budget.exhausted());
  await budget.drained();
  if (state.deleted) return view(state);
  return wf.continueAsNew<typeof installationWorkflow>(state, historyLimit);
}
