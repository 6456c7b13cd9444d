import http from 'node:http';
import https from 'node:https';
import type { Client } from '@temporalio/client';
import { isPublicEndpointPath } from '../installations/urls';
import { InstallationTokens } from '../integrations/installation-tokens';
import { IntegrationVersions } from '../integrations/versions';
import type { DestinationGuard } from '../net/destination-guard';
import type { PlatformPorts } from '../net/platform-ports';
import { createEgress } from './egress';
import { IntegrationRuntime } from './integration-runtime';
import { IsolatePool } from './isolate-pool';
import { CpuGroups } from './cpu-groups';
import type { Logger } from '../logger';
import type { NodeService } from './workerd-process';
import type { IntegrationLogStore } from '../delivery-log/integration-logs';
import type { AssetStore } from '../delivery-log/asset-store';
import { SourceLines } from '../integration-logs/source-lines';
import { IntegrationLogSink } from '../integration-logs/log-sink';
import { logsBinding } from './logs-binding';

export interface RuntimeOptions {
  client: Client;
  /** PLATFORM_ENCRYPTION_KEY: the installation tokens handed to the isolates derive from it. */
  encryptionKey: string;
  /** PLATFORM_BASE_URL: public endpoints in the environment are built from it. */
  baseUrl: string;
  /** Where the isolates' API binding reaches the platform API (PLATFORM_INTERNAL_API_URL); the base URL if omitted. */
  apiUrl?: string;
  /** Integration egress: public addresses and PLATFORM_EGRESS_ALLOW, never the platform's ports. */
  egressGuard: DestinationGuard;
  /** Learns each workerd process's ports, so that no guard ever lets anything reach them. */
  platformPorts: PlatformPorts;
  /** PLATFORM_ISOLATE_MAX_PROCESSES */
  maxProcesses?: number;
  /** Where it says that organizations' code cannot be given fair CPU shares here. */
  logger?: Logger;
  /** Where integration code's console lines are kept (and versions' source maps read); without it they are not. */
  stores?: { integrationLogs: IntegrationLogStore; assets: AssetStore };
}

/** An installation's token (`itk_…`), the only credential the binding carries. */
const INSTALLATION_BEARER = /^Bearer itk_\S+$/;

/**
 * The `platformApi` binding of every isolate: platform code that forwards the isolate's
 * request to the platform API. Its calls reach the API from loopback, which the codec
 * endpoint (embedded default) and /metrics trust, so it carries only `/v1/` calls made with
 * an installation token, and only to the API's own origin (a path such as `//host:port/`
 * names another host), and never to a public endpoint (which calls integration code): the
 * token decides what the call may do, and the egress guard, which the binding does not go
 * through, is never bypassed.
 */
function platformApiBinding(baseUrl: string): NodeService {
  const base = new URL(baseUrl);
  const client = base.protocol === 'https:' ? https : http;
  const agent = new client.Agent({ keepAlive: true });
  return (req, res) => {
    const asked = new URL(req.url ?? '/', base);
    const target = new URL(`${asked.pathname}${asked.search}`, base);
    if (target.origin !== base.origin || !target.pathname.startsWith('/v1/') || isPublicEndpointPath(target.pathname) || !INSTALLATION_BEARER.test(req.headers.authorization ?? '')) {
      req.resume();
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end('{"error":"forbidden","message":"the platform API binding carries only /v1/ calls made with the installation token, and none to a public endpoint"}');
      return;
    }
    const headers = { ...req.headers, host: base.host };
    const forwarded = client.request(target, { method: req.method, headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forwarded.on('error', () => {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"error":"unavailable","message":"the platform API did not answer"}');
    });
    req.pipe(forwarded);
  };
}

/** Integration code's runtime in this process: isolates, egress, the API binding. */
export function createIntegrationRuntime(options: RuntimeOptions): { runtime: IntegrationRuntime; pool: IsolatePool } {
  const versions = new IntegrationVersions(options.client);
  const { groups: cpuGroups, why } = CpuGroups.open();
  if (why) options.logger?.warn({ why }, 'organizations’ integration code shares the CPU as the kernel has it, not fairly: no cpu cgroup for its processes');
  const platformApi = platformApiBinding(options.apiUrl ?? options.baseUrl);
  const { stores } = options;
  const sourceMapOf = async (name: string, version: number) => {
    const hash = (await versions.get(name, version)).sourceMapHash;
    return hash ? (await stores!.assets.get(hash))?.bytes.toString('utf8') : undefined;
  };
  const logs = stores && new IntegrationLogSink(stores.integrationLogs, new SourceLines(sourceMapOf), options.logger);
  const pool = new IsolatePool({
    cpuGroups,
    loadScript: async (name, version) => (await versions.get(name, version)).script,
    outbound: createEgress(options.egressGuard),
    bindings: ({ integration, version, installation, organization }) => ({
      platformApi,
      ...(logs && { platformLogs: logsBinding(logs, { integration, version, installationId: installation, organizationId: organization }) }),
    }),
    onStarted: (process) => options.platformPorts.watchProcess(process.pid),
    maxProcesses: options.maxProcesses,
  });
  return { runtime: new IntegrationRuntime(pool, versions, new InstallationTokens(options.encryptionKey), options.baseUrl), pool };
}
