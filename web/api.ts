/** The console's calls to the API: this origin, the session's cookie, its CSRF token on changes. */

export interface Session {
  csrfToken: string;
  caller: { kind: 'admin' | 'member'; userId?: string; orgs?: string[] };
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let csrfToken = '';
/** A delivery portal link's token: the portal's requests act with it, not with a session. */
let portalToken: string | undefined;

export function useSessionToken(token: string): void {
  csrfToken = token;
}

export function usePortalToken(token: string): void {
  portalToken = token;
}

export async function api<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (portalToken) headers.Authorization = `Bearer ${portalToken}`;
  else if (method !== 'GET') headers['X-CSRF-Token'] = csrfToken;
  const response = await fetch(path, { method, headers, credentials: 'same-origin', ...(body !== undefined && { body: JSON.stringify(body) }) });
  if (response.status === 204) return undefined as T;
  const answer = (await response.json().catch(() => ({}))) as { message?: string };
  if (!response.ok) throw new ApiFailure(response.status, answer.message ?? `${response.status} ${response.statusText}`);
  return answer as T;
}

export interface Attempt {
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode?: number;
  error?: string;
  errorMessage?: string;
  responseBody?: string;
  nextDelayMs?: number;
  workflow?: { workflowId: string; runId: string; url?: string };
}

export interface DeliverySummary {
  id: string;
  eventId: string;
  installationId: string;
  organizationId?: string;
  eventType: string;
  url?: string;
  status: string;
  createdAt: string;
  completedAt?: string;
  failureReason?: string;
  /** receiver_failing: held while the receiver fails, out on its own once it answers. */
  heldReason?: string;
  skipReason?: string;
  replayOf?: string;
  attemptCount?: number;
}

export interface Delivery extends DeliverySummary {
  payload: string;
  attempts: Attempt[];
}

/** A link from outside (the Temporal UI's) is followed only if it is http(s). */
export const safeHref = (url: string | undefined): string | undefined => (url && /^https?:\/\//i.test(url) ? url : undefined);

export interface Installation {
  id: string;
  integration: string;
  version?: number;
  pinned?: boolean;
  target: { org: string; space?: string; site?: string };
  status: string;
  pause?: { reason: string; at?: string; troubleSince?: string };
  configuration: Record<string, unknown>;
  createdAt: string;
}

// The API's own shapes, types only (nothing of the server is bundled).
export type { ReceiverHealth as Health, StatusCounts } from '../src/delivery-log/health-reads';

export interface Operation {
  id: string;
  status: 'running' | 'done' | 'cancelled' | 'failed';
  total: number;
  done: number;
  failed: number;
  left: number;
}

/** The path of an installation's API resource (ids are checked by the API; encoded all the same). */
export const installationPath = (id: string, rest = ''): string => `/v1/installations/${encodeURIComponent(id)}${rest}`;
