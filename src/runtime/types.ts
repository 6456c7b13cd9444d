/** Types an integration is written against: events, the environment, UI markup (SPEC.md). */

import type { LISTED_INSTALLATION_STATUSES } from '../installations/types';

export type InstallationStatusValue = (typeof LISTED_INSTALLATION_STATUSES)[number];

/** `context.environment`: built by the platform for each call, never taken from a caller. */
export interface IntegrationEnvironment {
  /** URL of the platform's HTTP API (reached through `context.api`). */
  apiEndpoint: string;
  /** The installation's token for the platform API, limited to its own installation and scopes. */
  apiTokens: { installation: string };
  /** The integration; `publicContentEndpoint` is GitBook's name for where its web frames load (the public endpoint here). */
  /** `urls.icon`: its icon as the platform serves it, for versions published with one since 2026-11-27. */
  integration: { name: string; version: number; title?: string; description?: string; externalLinks: { url: string; label: string }[]; scopes: string[]; urls: { publicEndpoint: string; publicContentEndpoint: string; icon?: string } };
  /** The manifest's `secrets`, as substituted at publish. */
  secrets: Record<string, string>;
  /** The installation's id. */
  id: string;
  /** `organization:<id>`, `space:<id>` or `site:<id>`. */
  target: string;
  status: { value: InstallationStatusValue };
  configuration: Record<string, unknown>;
  urls: { publicEndpoint: string };
  externalIds: string[];
  /** Organization and space installations: which spaces it covers. */
  space_selection?: { mode: 'all' | 'selected'; spaces: string[] };
  /** Space installations: the space; site installations: the site's space when known. */
  space?: string;
  /** Site installations: the site. */
  site?: string;
  /** GitBook's shape of the installation (every installation has one; its configuration is the one above). */
  installation?: EnvironmentInstallation;
  /** GitBook's shape of a space installation: the space, and the same configuration. */
  spaceInstallation?: EnvironmentTargetInstallation & { space: string };
  /** GitBook's shape of a site installation: the site, and the same configuration. */
  siteInstallation?: EnvironmentTargetInstallation & { site: string };
}

/** `environment.installation`, as GitBook's code reads it. */
export interface EnvironmentInstallation {
  id: string;
  status: InstallationStatusValue;
  configuration: Record<string, unknown>;
  externalIds: string[];
  target: { organization: string };
  space_selection: { mode: 'all' | 'selected'; spaces: string[] };
  urls: { publicEndpoint: string; publicContentEndpoint: string };
}

/** `environment.spaceInstallation` and `siteInstallation`, as GitBook's code reads them. */
export interface EnvironmentTargetInstallation {
  integration: string;
  installation: string;
  status: InstallationStatusValue;
  configuration: Record<string, unknown>;
  externalIds: string[];
  urls: { publicEndpoint: string; publicContentEndpoint: string };
}

/** What the envelope's `event` part carries for an HTTP call to the public endpoint. */
export interface FetchEvent {
  type: 'fetch';
  request: { method: string; url: string; headers: Record<string, string> };
}

export interface UIRenderEvent {
  type: 'ui_render';
  componentId: string;
  props: Record<string, unknown>;
  state?: Record<string, unknown>;
  action?: ComponentAction;
  /** Where the component renders (GitBook's ContentKit context), when the caller says. */
  context?: Record<string, unknown>;
}

export interface InstallationSetupEvent {
  type: 'installation_setup';
  eventId: string;
  installationId: string;
  status: InstallationStatusValue;
  previous?: { status: InstallationStatusValue; configuration: Record<string, unknown> };
}

export interface SpaceInstallationSetupEvent extends Omit<InstallationSetupEvent, 'type'> {
  type: 'space_installation_setup';
  spaceId: string;
}

export interface SpaceEvent {
  type: 'space_view' | 'space_content_updated' | 'space_visibility_updated' | 'space_gitsync_started' | 'space_gitsync_completed';
  eventId: string;
  installationId: string;
  spaceId: string;
  [field: string]: unknown;
}

export type IntegrationEvent = FetchEvent | UIRenderEvent | InstallationSetupEvent | SpaceInstallationSetupEvent | SpaceEvent;

/** `action.action` names the action; the rest is what the element's `onPress` carried. */
export interface ComponentAction {
  action: string;
  [key: string]: unknown;
}

/** The platform's UI markup: a block of elements. */
export type UIElement =
  | { type: 'block'; children: UIElement[] }
  | { type: 'text'; text: string; style?: 'bold' | 'italic' | 'code' }
  | { type: 'button'; label: string; onPress: ComponentAction; style?: 'primary' | 'secondary' | 'danger' }
  | { type: 'box'; children: UIElement[] }
  | { type: 'hstack' | 'vstack'; children: UIElement[] }
  | { type: 'image'; source: { url: string }; aspectRatio?: number }
  | { type: 'link'; url: string; children: UIElement[] }
  | { type: 'divider' };
