import type { Server } from 'node:http';
import { createHttpServer, drainServer } from './http-server';
import type { AddressInfo } from 'node:net';
import Koa, { type Context, type Next } from 'koa';
import type { Client } from '@temporalio/client';
import { Authenticator } from './auth';
import { buildApiDeps, type ApiDeps, type ApiSettings } from './deps';
import { ApiError, errorMiddleware } from './errors';
import { RouteTable } from './route-table';
import { EngineWait } from './engine-wait';
import { codecCors, codecRoutes } from './routes/codec';
import { deliveryRoutes } from './routes/deliveries';
import { eventRoutes } from './routes/events';
import { installationRoutes } from './routes/installations';
import { systemRoutes } from './routes/system';
import { tenancyRoutes } from './routes/tenancy';
import { DIRECTORY_WORKFLOW_ID, directoryWorkflow } from '../workflows/directory';
import { REGISTRY_WORKFLOW_ID } from '../contracts/integration';
import { registryWorkflow } from '../workflows/integration';
import { integrationRoutes } from './routes/integrations';
import { oauthRoutes, runtimeRoutes } from './routes/runtime';
import { recordedPath, traceRequests } from '../tracing/koa';
import { listenOn } from '../net/listen';
import { consoleRoutes } from './routes/console';
import { consolePages } from './console-pages';

/** Mounts every resource's routes in one place, behind one error middleware. */
export function createApp(deps: ApiDeps): { app: Koa; routes: RouteTable } {
  const routes = new RouteTable(new Authenticator(deps.directory, deps.adminToken, deps.installationTokens, deps.installations, deps.consoleSessions, deps.portalLinks), new EngineWait(deps.client));
  for (const mount of [systemRoutes, consoleRoutes, tenancyRoutes, integrationRoutes, installationRoutes, runtimeRoutes, oauthRoutes, eventRoutes, deliveryRoutes, codecRoutes]) mount(routes, deps);

  const app = new Koa({ proxy: false });
  app.use(traceRequests);
  app.use(errorMiddleware(deps.logger));
  app.use(async (ctx, next) => {
    const started = Date.now();
    await next();
    deps.logger.debug({ method: ctx.method, path: recordedPath(ctx.path), status: ctx.status, ms: Date.now() - started }, 'request');
  });
  app.use(boundedUrl);
  app.use(codecCors(deps.codecCorsOrigins));
  app.use(methodNotAllowed);
  app.use(consolePages(deps.portalLinks, async (org) => (await deps.directory.organization(org))?.portalFrameAncestors ?? []));
  app.use(routes.router.routes());
  return { app, routes };
}

/** Longest request target (path and query) the API reads: no id or filter of it comes near. */
const MAX_URL_BYTES = 8 * 1024;

/** A longer request target is refused before any route looks anything up. */
async function boundedUrl(ctx: Context, next: Next): Promise<void> {
  if (Buffer.byteLength(ctx.url) > MAX_URL_BYTES) throw new ApiError(414, 'uri_too_long', `the request target is ${Buffer.byteLength(ctx.url)} bytes; the limit is ${MAX_URL_BYTES}`);
  await next();
}

/**
 * A known path asked with a method it does not take (TRACE among them): 405 with `Allow`,
 * in the error shape like every other refusal.
 */
async function methodNotAllowed(ctx: Context, next: Next): Promise<void> {
  await next();
  const matched = (ctx as { matched?: { methods: string[] }[] }).matched ?? [];
  if (ctx.status !== 404 || ctx.body !== undefined || matched.length === 0) return;
  const allowed = [...new Set(matched.flatMap((layer) => layer.methods))];
  if (allowed.includes(ctx.method)) return;
  ctx.set('Allow', allowed.join(', '));
  throw new ApiError(405, 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allowed.join(', ')}`);
}

/**
 * The directory and the integration registry must exist before the first request;
 * starting them is idempotent across API processes. (The worker starts its own
 * singletons: the log's retention and the stranded sweep.)
 */
export async function ensureSingletons(client: Client, taskQueue: string): Promise<void> {
  await client.workflow.start(directoryWorkflow, { workflowId: DIRECTORY_WORKFLOW_ID, taskQueue, args: [], workflowIdConflictPolicy: 'USE_EXISTING' });
  await client.workflow.start(registryWorkflow, { workflowId: REGISTRY_WORKFLOW_ID, taskQueue, args: [], workflowIdConflictPolicy: 'USE_EXISTING' });
}

export interface RunningApi {
  url: string;
  server: Server;
  close(): Promise<void>;
}

export async function startApi(settings: ApiSettings, port: number, host = '0.0.0.0'): Promise<RunningApi> {
  await ensureSingletons(settings.client, settings.taskQueue);
  const quarantined = await settings.stores.deliveries.quarantined();
  if (quarantined) settings.logger.warn({ quarantined }, 'deliveries recorded for the wrong organization before the fan-out fix are out of the log: review quarantined_deliveries (docs/decisions/tenancy.md)');
  const { app } = createApp(buildApiDeps(settings));
  const server = createHttpServer(app.callback(), settings.httpLimits);
  await listenOn(server, port, host, 'PORT');
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    server,
    close: () => drainServer(server),
  };
}
