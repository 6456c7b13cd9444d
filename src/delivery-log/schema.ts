/** The database the log is on: the embedded default, or production's. */
export type LogDialect = 'sqlite' | 'postgres';

/** The delivery log's tables (one schema for SQLite and PostgreSQL); times are Unix milliseconds. */

export interface EventsTable {
  event_id: string;
  organization_id: string;
  event_type: string;
  /** JSON array of the delivery ids the first ingest answered. */
  delivery_ids: string;
  created_at: number;
}

export interface DeliveriesTable {
  id: string;
  event_id: string;
  installation_id: string;
  organization_id: string;
  event_type: string;
  /** The URL of the last attempt (for webhooks). */
  url: string | null;
  status: string;
  /** Why a delivery was skipped or failed without a receiver's answer deciding it. */
  reason: string | null;
  /** The exact bytes every attempt sends, sealed with PLATFORM_ENCRYPTION_KEY. */
  body: string;
  attempts: number;
  replay_of: string | null;
  /** The shard workflow (and its run) that made the last attempt. */
  workflow_id: string | null;
  run_id: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  /** Its place among the deliveries recorded in the same flush (0 for replays): the order of a batch, kept by ordered lines. */
  seq: number;
  /** Its place in its installation's line, taken while it was recorded (see EventRecords.linePlaces); 0 unless the installation was ordered then. */
  line_no: number;
}

export interface AttemptsTable {
  delivery_id: string;
  attempt: number;
  started_at: number;
  duration_ms: number;
  url: string;
  status_code: number | null;
  error: string | null;
  error_message: string | null;
  response_body: string | null;
  /** The wait chosen before the next attempt; null when none follows. */
  next_delay_ms: number | null;
  workflow_id: string;
  run_id: string;
}

/**
 * Attempts written before they go out and removed with their outcome: one left behind was
 * made (or was about to be) by a worker that died before recording its answer.
 */
export interface AttemptsInFlightTable {
  delivery_id: string;
  attempt: number;
  started_at: number;
  url: string;
  workflow_id: string;
  run_id: string;
}

/** A read model of each installation: fan-out and attempts read it, its workflow writes it. */
export interface InstallationsTable {
  id: string;
  organization_id: string;
  integration: string;
  space_id: string | null;
  site_id: string | null;
  status: string;
  /** JSON array of the event types it selected. */
  events: string;
  url: string | null;
  /** JSON of the signing secrets, sealed. */
  secrets: string;
  version: number | null;
  /** 1 when a member keeps it on its version. */
  pinned: number;
  /** JSON array. */
  scopes: string;
  /** JSON of the configuration, sealed: it may hold OAuth credentials. */
  configuration: string;
  revision: number;
  created_at: number;
  updated_at: number;
  /** JSON of why and since when it is paused (InstallationPause); null when it is not, or a member paused it before reasons. */
  pause: string | null;
  /** 1 when its deliveries go through its ordered line. */
  ordered: number;
  /** 1 when its new events are held while its receiver fails (see holdsWhileFailing). */
  holds_while_failing: number;
}

/**
 * A receiver's health, per installation, from its finished deliveries: written in the
 * transaction that records them, so it never counts a delivery twice or misses one.
 */
export interface InstallationHealthTable {
  installation_id: string;
  /** Deliveries failed (by the receiver's answers) since the last one delivered. */
  consecutive_failures: number;
  /** When the first of those failed; null while the last one was delivered. */
  failing_since: number | null;
  last_success_at: number | null;
  last_failure_at: number | null;
  last_failure_status: number | null;
  last_failure_error: string | null;
  /** Where the receiver stood after the installation's last attempt batch ('slow' or 'fast': failing, see FailingKind; 'prompt'; null: answering). */
  failing_now: string | null;
  /** When `failing_now` was last written (ms since 1970). */
  failing_now_at: number | null;
  /** When the receiver began failing ('slow' or 'fast' since then, whichever); null while it is not. */
  failing_now_from: number | null;
}

/** The next send slot of an installation with a `max_per_second` (see PaceRecords). */
export interface InstallationPaceTable {
  installation_id: string;
  /** The next slot, in ms: written by processes of the versions before 0018 (this one writes it once, at the row's insert). */
  next_at: number;
  /** The next slot, in µs since 1970 (0018). */
  next_at_us: number;
  /** Until when a receiver's 429 holds every send, those whose slots were taken before it too. */
  held_until: number;
  /** Until when it goes at half its pace (after a receiver's 429). */
  slow_until: number;
}

/** Background operations (the release of held deliveries, bulk replays): their progress, as their workflows write it. */
export interface OperationsTable {
  id: string;
  kind: string;
  organization_id: string;
  installation_id: string;
  /** running, done, cancelled */
  status: string;
  total: number;
  done: number;
  failed: number;
  /** JSON of what it was asked (its filter, its choice). */
  request: string;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

/** The web console's sessions (see ConsoleSessions). */
export interface ConsoleSessionsTable {
  id_hash: string;
  /** The bearer token the session acts with, sealed. */
  token: string;
  csrf: string;
  created_at: number;
  expires_at: number;
}

/** OAuth states spent (each may be used once); kept past their expiry, then purged. */
export interface OAuthStatesTable {
  nonce: string;
  installation_id: string;
  used_at: number;
}

/** Deliveries recorded for the wrong organization before the fan-out fix (migration 0004): no body. */
export interface QuarantinedDeliveriesTable {
  id: string;
  event_id: string;
  installation_id: string;
  organization_id: string;
  event_organization_id: string;
  status: string;
  attempts: number;
  created_at: number;
  quarantined_at: number;
}

/** The directory's read model: its workflow writes each organization before the creation answers. */
export interface OrganizationsTable {
  id: string;
  subdomain: string;
  title: string;
  created_at: number;
  /** JSON array of the origins that may frame its portal links; null: none. */
  portal_frame_ancestors: string | null;
}

/** The directory's read model of users: who a bearer token is (by its hash), and their organizations. */
export interface UsersTable {
  id: string;
  token_hash: string;
  /** JSON array of organization ids. */
  orgs: string;
  created_at: number;
}

/** One line of integration code's console (or the platform's word about its log), for the integration's owners. */
export interface IntegrationLogsTable {
  /** Time-ordered within a millisecond: the page cursor's tie-break. */
  id: string;
  integration: string;
  version: number;
  installation_id: string;
  organization_id: string;
  time: number;
  level: string;
  /** fetch, event, component, load (the script's own top level), or platform. */
  kind: string;
  event_id: string | null;
  trace_id: string | null;
  message: string;
}

/** An integration's image by the SHA-256 of its bytes (hex). */
export interface IntegrationAssetsTable {
  hash: string;
  content_type: string;
  /** The bytes, base64. */
  data: string;
  size: number;
  created_at: number;
}

/** Derivations a migration left to a process that holds the key (see migration 0017), by name, until done. */
export interface SealedRederivationsTable {
  name: string;
}

/** An ordered installation's line counter: the last number its deliveries took. */
export interface InstallationLinesTable {
  installation_id: string;
  last_no: number;
}

export interface Schema {
  events: EventsTable;
  deliveries: DeliveriesTable;
  quarantined_deliveries: QuarantinedDeliveriesTable;
  attempts: AttemptsTable;
  attempts_in_flight: AttemptsInFlightTable;
  installations: InstallationsTable;
  installation_health: InstallationHealthTable;
  operations: OperationsTable;
  installation_pace: InstallationPaceTable;
  installation_lines: InstallationLinesTable;
  oauth_states: OAuthStatesTable;
  console_sessions: ConsoleSessionsTable;
  organizations: OrganizationsTable;
  users: UsersTable;
  integration_logs: IntegrationLogsTable;
  integration_assets: IntegrationAssetsTable;
  sealed_rederivations: SealedRederivationsTable;
}
