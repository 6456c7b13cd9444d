import * as wf from '@temporalio/workflow';
import { applyPatch, defaultsOf, maskCredentials, type Configuration } from '../installations/configuration';
import { checkInstallationPatch, configurationComplete, schemaFor, type ConfigurationSchemas } from '../installations/rules';
import { selectedEvents, WEBHOOK_INTEGRATION } from '../installations/webhook';
import { type Target } from '../installations/target';
import { deliverableEvents } from '../installations/event-scopes';
import { HistoryBudget } from './continue-as-new';
import { invalid, notFound } from '../contracts/failures';
import type { createActivities, PlatformEvent } from '../activities';
import { holdsEvents, type InstallationPause, type InstallationProjection, type InstallationStatus, type SigningSecret } from '../installations/types';
import { configureUpdate, deleteUpdate, installationQuery, moveToVersionUpdate, pauseUpdate, resumeUpdate, rotateSecretUpdate, type InstallationView, type ResumeAnswer } from '../contracts/installation';
import { operationWorkflowId } from '../contracts/operation';
import type { OperationRequest } from '../delivery-log/types';
import type { OperationalEvent } from '../installations/operational-events';
import { operationWorkflow } from './operation';

/** A rotated-out secret stays valid this long, and is signed with meanwhile (DESIGN.md §3). */
export const ROTATED_SECRET_VALIDITY_MS = 24 * 60 * 60 * 1000;
/**
 * Rotated-out secrets valid at once, at most: each adds a `v1=` to every delivery's header,
 * and some 240 of them (a rotation loop) made it longer than receivers take (431). Past it
 * the oldest ends early.
 */
export const MAX_ROTATED_SECRETS = 5;

/** The read model's write and the installation's own events: short, local, retried until the database takes them. */
const { saveInstallation, dispatchInstallationEvents, announceOperational } = wf.proxyLocalActivities<ReturnType<typeof createActivities>>({
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
  /** The installed version's scopes and the event types its code handles (none for webhooks). */
  scopes?: string[];
  eventTypes?: string[];
  /** space_installation_setup went out. */
  spaceAnnounced?: boolean;
  /** Kept on its version by a member: a new version does not move it. */
  pinned?: boolean;
  /** Why and since when it is paused (absent for pauses from before reasons: a member's). */
  pause?: InstallationPause;
}

export interface NewInstallation {
  id: string;
  integration: string;
  version?: number;
  configurations?: ConfigurationSchemas;
  target: Target;
  signingSecret: string;
  scopes?: string[];
  eventTypes?: string[];
}

/**
 * Changes a run takes before it continues as new (about six history events each): a worker
 * that has not cached the run (after a restart) replays at most this many before the next
 * write, however old the installation.
 */
const CHANGES_PER_RUN = 100;

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
  return { id, integration, version, ...(state.pinned && { pinned: true }), target, status: statusOf(state), ...(state.paused && state.pause && { pause: state.pause }), configuration: maskCredentials(configuration), createdAt, updatedAt };
}

function projection(state: InstallationState): InstallationProjection {
  const url = state.configuration.webhook_url;
  return {
    id: state.id,
    integration: state.integration,
    target: state.target,
    status: statusOf(state),
    events: state.integration === WEBHOOK_INTEGRATION ? selectedEvents(state.target, state.configuration) : deliverableEvents(state.eventTypes ?? [], state.scopes ?? []),
    url: typeof url === 'string' ? url : undefined,
    version: state.version,
    pinned: state.pinned ?? false,
    scopes: state.scopes ?? [],
    configuration: state.configuration,
    createdAt: state.createdAt,
    updatedAt: state.updatedAt,
    revision: state.revision,
    signingSecrets: state.signingSecrets,
    ...(state.paused && state.pause && { pause: state.pause }),
  };
}

/**
 * One installation as an entity workflow: every change is an update that validates before
 * it enters history, state is read with queries, and every change reaches the read model
 * in the delivery log's database before the update answers, so fan-out and attempts in
 * every process see it from the next event on.
 */
export async function installationWorkflow(state: InstallationState, historyLimit = CHANGES_PER_RUN): Promise<InstallationView> {
  // Runs started with 500 changes a run (about 3,000 events) replay as they ran.
  const budget = new HistoryBudget(wf.patched('installation-runs-of-100') ? Math.min(historyLimit, CHANGES_PER_RUN) : historyLimit);

  async function changed(): Promise<InstallationView> {
    state.revision += 1;
    state.updatedAt = new Date().toISOString();
    budget.spend();
    await saveInstallation(projection(state));
    return view(state);
  }
  /**
   * SPEC.md: every configuration edit (the first is the install) fires installation_setup
   * with the status and what it was before; a space installation's first also fires
   * space_installation_setup. Only to code that handles them.
   */
  async function announceSetup(previous: { status: InstallationStatus; configuration: Configuration }): Promise<void> {
    const handled = state.eventTypes ?? [];
    const common = { installationId: state.id, status: statusOf(state), previous: { status: previous.status === 'deleted' ? 'paused' : previous.status, configuration: previous.configuration } };
    const events: PlatformEvent[] = [];
    if (handled.includes('installation_setup')) events.push({ type: 'installation_setup', eventId: `evt_setup_${state.id}_${state.revision}`, ...common });
    if (handled.includes('space_installation_setup') && state.target.space && !state.spaceAnnounced) {
      events.push({ type: 'space_installation_setup', eventId: `evt_space_setup_${state.id}`, spaceId: state.target.space, ...common });
      state.spaceAnnounced = true;
    }
    if (events.length) await dispatchInstallationEvents({ id: state.id, org: state.target.org }, events);
  }
  // Being deleted is gone already: a change racing the deletion answers 404, as one after it does.
  const notDeleted = () => {
    if (state.deleted) throw notFound('installation');
  };

  wf.setHandler(installationQuery, () => view(state));

  wf.setHandler(
    configureUpdate,
    async (patch, by) => {
      const previous = { status: statusOf(state), configuration: state.configuration };
      state.configuration = applyPatch(state.configuration, patch);
      const answer = await changed();
      // SPEC.md fires it on a user's edit. The code's own edit (OAuth credentials stored, say)
      // fires it only when it changes the status: a setup handler that edits the
      // configuration would otherwise fire itself for ever (a security probe ran 60 rounds in 17 s).
      if (!by?.byIntegration || statusOf(state) !== previous.status) await announceSetup(previous);
      return answer;
    },
    {
      validator: (patch, _by) => {
        notDeleted();
        if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw invalid('configuration must be an object');
        const issues = checkInstallationPatch(state.integration, state.configurations, state.target, patch);
        if (issues.length) throw invalid('invalid configuration', issues.map((issue) => ({ ...issue, field: `configuration.${issue.field}` })));
      },
    },
  );
  /** The organization's webhook installations that select it hear of a pause or a resume (runs from before them replay without). */
  async function announce(type: OperationalEvent['type']): Promise<void> {
    if (!wf.patched('operational-events')) return;
    const { id, integration, target } = state;
    // Not its URL: such URLs often carry a secret, and the event goes to other receivers.
    const installation = { id, integration, status: statusOf(state), ...(state.pause && { pause: state.pause }), ...(type === 'installation_resumed' && { resumedAt: state.updatedAt }) };
    await announceOperational({ type, eventId: `evt_${type === 'installation_paused' ? 'paused' : 'resumed'}_${id}_${state.revision}`, organizationId: target.org, installation });
  }
  wf.setHandler(
    pauseUpdate,
    async (request) => {
      // The platform pauses once: its later findings change nothing of a pause in place, a member's or its own;
      // nor does a member's pause change the platform's (its events stay held, for the resume to release).
      if ((request || holdsEvents(state.pause)) && state.paused) return view(state);
      state.paused = true;
      state.pause = { reason: request?.reason ?? 'member', at: new Date().toISOString(), ...(request && { troubleSince: request.troubleSince }) };
      const answer = await changed();
      await announce('installation_paused');
      return answer;
    },
    { validator: (_request) => notDeleted() },
  );
  wf.setHandler(
    resumeUpdate,
    async (request) => {
      const pause = state.paused && holdsEvents(state.pause) ? state.pause : undefined;
      state.paused = false;
      state.pause = undefined;
      const answer: ResumeAnswer = await changed();
      // What was held goes out (or is dropped) in the background: a workflow of its own, which outlives this run.
      if (pause) {
        const operation = `op_release_${state.id}_${state.revision}`;
        // What failed from the trouble's beginning up to the pause (those held since are released, not replayed).
        const replay = request?.replayFailed && pause.troubleSince ? { since: Date.parse(pause.troubleSince), until: Date.parse(pause.at) } : {};
        const release: OperationRequest = { id: operation, kind: 'release_held', organizationId: state.target.org, installationId: state.id, held: request?.held ?? 'deliver', heldUntil: Date.now(), ...replay };
        await wf.startChild(operationWorkflow, { workflowId: operationWorkflowId(operation), args: [release], parentClosePolicy: wf.ParentClosePolicy.ABANDON });
        answer.operation = operation;
      }
      await announce('installation_resumed');
      return answer;
    },
    {
      validator: (request) => {
        notDeleted();
        if (request?.held !== undefined && request.held !== 'deliver' && request.held !== 'drop') throw invalid('invalid resume', [{ field: 'held', message: 'must be deliver or drop' }]);
        if (request?.replayFailed !== undefined && typeof request.replayFailed !== 'boolean') throw invalid('invalid resume', [{ field: 'replayFailed', message: 'must be a boolean' }]);
      },
    },
  );
  wf.setHandler(
    deleteUpdate,
    () => {
      state.deleted = true;
      return changed();
    },
    { validator: notDeleted },
  );
  wf.setHandler(
    moveToVersionUpdate,
    async (change, move) => {
      const moves = move === 'rollout' ? !state.pinned && change.version > (state.version ?? 0) : change.version !== state.version || state.pinned !== (move === 'pin');
      if (!moves) return view(state);
      state.pinned = move === 'pin';
      if (change.version === state.version) return changed();
      // Configuration and OAuth credentials stay; keys the new version gives a default get it where unset.
      const previous = { status: statusOf(state), configuration: state.configuration };
      state.version = change.version;
      state.configurations = change.configurations;
      state.scopes = change.scopes;
      state.eventTypes = change.eventTypes;
      state.configuration = { ...defaultsOf(schemaFor(change.configurations, state.target)), ...state.configuration };
      const answer = await changed();
      await announceSetup(previous);
      return answer;
    },
    {
      validator: (change, move) => {
        notDeleted();
        if (state.integration === WEBHOOK_INTEGRATION) throw invalid('the webhook integration has no versions');
        if (!Number.isInteger(change?.version) || change.version < 1) throw invalid('version must be a published version number');
        if (!['rollout', 'pin', 'unpin'].includes(move)) throw invalid('unknown move');
      },
    },
  );
  wf.setHandler(
    rotateSecretUpdate,
    async (secret) => {
      const now = Date.now();
      const expiresAt = new Date(now + ROTATED_SECRET_VALIDITY_MS).toISOString();
      const valid = state.signingSecrets.filter((old) => !old.expiresAt || Date.parse(old.expiresAt) > now);
      // Newest first: the current one, then those rotated out. Runs from before the cap replay as they ran.
      const stillValid = wf.patched('cap-rotated-secrets') ? valid.slice(0, MAX_ROTATED_SECRETS) : valid;
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
