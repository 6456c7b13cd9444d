import type { Target } from './target';

export interface SigningSecret {
  secret: string;
  createdAt: string;
  /** Set when rotated out. */
  expiresAt?: string;
}

/** `deleted` stays in the read model (an attempt must learn it); nothing lists it. */
export const LISTED_INSTALLATION_STATUSES = ['pending', 'active', 'paused'] as const;
export type InstallationStatus = (typeof LISTED_INSTALLATION_STATUSES)[number] | 'deleted';

/**
 * Why an installation is paused: a member asked, or the platform found its receiver
 * failing every delivery for a while, or answering 410 Gone (see EndpointHealth).
 */
export const PAUSE_REASONS = ['member', 'receiver_failing', 'receiver_gone'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

export interface InstallationPause {
  reason: PauseReason;
  /** When it was paused. */
  at: string;
  /** The platform's pauses: when the trouble began (the first of the failures in a row), what a replay of the failed starts from. */
  troubleSince?: string;
}

/** A pause by the platform holds new events (recorded `held`, released on resume); a member's skips them, as before. */
export const holdsEvents = (pause: InstallationPause | undefined): boolean => pause !== undefined && pause.reason !== 'member';

/** What fan-out, attempts and listings need of an installation. */
export interface InstallationSummary {
  id: string;
  integration: string;
  /** The integration version it runs (none for webhooks). */
  version?: number;
  /** Kept on its version by a member: a new version does not move it. Absent in projections from before pins. */
  pinned?: boolean;
  target: Target;
  status: InstallationStatus;
  /** Event types the installation selected. */
  events: string[];
  url?: string;
  createdAt: string;
  /** Increases with every change; the read model keeps the newest it has seen. */
  revision: number;
  /** Set while paused with a reason (absent in pauses from before reasons). */
  pause?: InstallationPause;
  /** Its deliveries go through its ordered line (see deliversInOrder). */
  ordered?: true;
  /** Its new events are held while its receiver fails (see holdsWhileFailing). */
  holdsWhileFailing?: true;
}

export interface InstallationProjection extends InstallationSummary {
  signingSecrets: SigningSecret[];
  updatedAt: string;
  /** Its scopes, the configuration as stored (credentials included). */
  scopes: string[];
  configuration: Record<string, unknown>;
}

/** What fan-out records for a paused installation instead of handing the delivery over: held or skipped (see holdsEvents); nothing when it is not paused. */
export function whilePaused(installation: Pick<InstallationSummary, 'status' | 'pause'>): { held?: true; skipReason?: string } {
  if (installation.status !== 'paused') return {};
  return holdsEvents(installation.pause) ? { held: true } : { skipReason: 'installation_paused' };
}
