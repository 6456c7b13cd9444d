import { randomBytes } from 'node:crypto';
import type { InstallationProjection } from '../installations/types';
import { buildEnvironment } from './environment';
import type { InstallationTokens } from '../integrations/installation-tokens';
import type { IntegrationVersions } from '../integrations/versions';
import type { IntegrationEvent } from '../runtime/types';
import type { IsolatePool } from './isolate-pool';
import { isNoRoom } from './isolate-error';
import type { IsolateAnswer } from './workerd-process';
import { isolateCalls, statusClass } from '../metrics';
import { activeTraceparent } from '../tracing';
import { INVOCATION_HEADER } from './runtime-host';

/** An invocation's wall clock (DESIGN.md runtime limits); past it the isolate's process is killed. */
export const INVOCATION_DEADLINE_MS = 10_000;

/** The envelope of DESIGN.md §3 as multipart/form-data: event, environment, and the body when there is one. */
export function envelope(event: object, environment: object, body?: Buffer): { contentType: string; payload: Buffer } {
  const boundary = `----platform${randomBytes(12).toString('hex')}`;
  const part = (name: string, type: string, content: Buffer, filename = '') =>
    Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"${filename && `; filename="${filename}"`}\r\nContent-Type: ${type}\r\n\r\n`), content, Buffer.from('\r\n')]);
  const parts = [part('event', 'application/json', Buffer.from(JSON.stringify(event))), part('environment', 'application/json', Buffer.from(JSON.stringify(environment)))];
  if (body && body.length) parts.push(part('fetch-body', 'application/octet-stream', body, 'body'));
  return { contentType: `multipart/form-data; boundary=${boundary}`, payload: Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]) };
}

/**
 * Calls an installation's integration code: the envelope the platform builds (its own
 * environment, never a caller's), POSTed to `/v1` of the isolate of that version and
 * organization.
 */
export class IntegrationRuntime {
  constructor(
    private readonly pool: IsolatePool,
    private readonly versions: IntegrationVersions,
    private readonly tokens: InstallationTokens,
    private readonly baseUrl: string,
  ) {}

  async invoke(installation: InstallationProjection, event: IntegrationEvent | Record<string, unknown>, body?: Buffer, deadlineMs = INVOCATION_DEADLINE_MS): Promise<IsolateAnswer> {
    const version = await this.versions.get(installation.integration, installation.version!);
    const environment = buildEnvironment(installation, version, this.baseUrl, this.tokens.issue(installation.id));
    const { contentType, payload } = envelope(event, environment, body);
    const kind = event.type === 'fetch' ? 'fetch' : event.type === 'ui_render' ? 'component' : 'event';
    // What the integration's log lines of this call are tagged with.
    const described = { kind, eventId: 'eventId' in event && typeof event.eventId === 'string' ? event.eventId : undefined, traceId: activeTraceparent()?.split('-')[1] };
    const timer = isolateCalls.startTimer({ kind });
    try {
      const headers = { 'content-type': contentType, [INVOCATION_HEADER]: JSON.stringify(described) };
      const answer = await this.pool.call({ integration: installation.integration, version: version.version, installation: installation.id, organization: installation.target.org }, '/v1', { method: 'POST', headers, body: payload }, deadlineMs);
      timer({ outcome: statusClass(answer.status) });
      return answer;
    } catch (err) {
      timer({ outcome: isNoRoom(err) ? 'refused' : 'killed' });
      throw err;
    }
  }
}
