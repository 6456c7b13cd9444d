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

/** What fan-out, attempts and listings need of an installation. */
export interface InstallationSummary {
  id: string;
  integration: string;
  target: Target;
  status: InstallationStatus;
  /** Event types the installation selected. */
  events: string[];
  url?: string;
  createdAt: string;
  /** Increases with every change; the read model keeps the newest it has seen. */
  revision: number;
}

export interface InstallationProjection extends InstallationSummary {
  signingSecrets: SigningSecret[];
  updatedAt: string;
  /** The installed integration version (none for webhooks), its scopes, the configuration as stored (credentials included). */
  version?: number;
  /** Kept on its version by a member: a new version does not move it. Absent in projections from before pins. */
  pinned?: boolean;
  scopes: string[];
  configuration: Record<string, unknown>;
}
