import * as wf from '@temporalio/workflow';
import type { Configuration } from '../installations/configuration';
import type { ConfigurationSchemas } from '../installations/rules';
import type { InstallationProjection, PauseReason, SigningSecret } from '../installations/types';

/*
 * What the API and the activities ask of an installation's workflow (installation.ts):
 * its id, its updates and query, and what they take and answer. They import this, never
 * the workflow (which imports the activities).
 */

/** What the API shows: the read model's installation without its secrets, scopes, events, URL or revision. */
export type InstallationView = Pick<InstallationProjection, 'id' | 'integration' | 'version' | 'pinned' | 'target' | 'status' | 'pause' | 'configuration' | 'createdAt' | 'updatedAt'>;

/** The platform's pause (a member's takes none): why, and since when its receiver has been failing. */
export interface PauseRequest {
  reason: Exclude<PauseReason, 'member'>;
  troubleSince: string;
}

/** What a resume does with what was held while the platform paused it: deliver it (in order of ingest; the default) or drop it. */
export interface ResumeRequest {
  held?: 'deliver' | 'drop';
  /** Also replay, after the release, what failed from the trouble's beginning to the pause (once per event). */
  replayFailed?: boolean;
}

/** A resume of an installation that held events names the operation that releases them. */
export type ResumeAnswer = InstallationView & { operation?: string };

/** What a version brings to an installation of it: its configuration schemas, scopes and the events its code handles. */
export interface VersionChange {
  version: number;
  configurations?: ConfigurationSchemas;
  scopes: string[];
  eventTypes: string[];
}

/**
 * How an installation comes to a version: a publish's rollout (to a newer one only, and
 * never a pinned installation), a member's pin (to any published one, kept there), or an
 * unpin (to the latest, moved by rollouts again).
 */
export type VersionMove = 'rollout' | 'pin' | 'unpin';

export const installationWorkflowId = (id: string): string => `installation/${id}`;

/** `byIntegration`: the edit came from the integration's own code (its installation token); absent in histories from before it. */
export const configureUpdate = wf.defineUpdate<InstallationView, [Configuration, { byIntegration?: boolean } | undefined]>('configure');
/** A member's pause, or the platform's (with its request): the platform's changes nothing of one paused already. */
export const pauseUpdate = wf.defineUpdate<InstallationView, [PauseRequest | undefined]>('pause');
export const resumeUpdate = wf.defineUpdate<ResumeAnswer, [ResumeRequest | undefined]>('resume');
export const deleteUpdate = wf.defineUpdate<InstallationView>('delete');
export const moveToVersionUpdate = wf.defineUpdate<InstallationView, [VersionChange, VersionMove]>('moveToVersion');
/** The API generates the new secret: workflow randomness is deterministic, not secret. */
export const rotateSecretUpdate = wf.defineUpdate<SigningSecret, [string]>('rotateSecret');
/** For operators in the Temporal UI; the API reads the read model, never this (no history is replayed on a request). */
export const installationQuery = wf.defineQuery<InstallationView>('installation');
