import { DELIVERY_STATUSES, type Delivery, type DeliveryStatus } from '../../delivery-log/types';
import { isDeliveryId } from '../../ids';
import { requireMember, scopedInstallation, type Caller } from '../auth';
import type { ApiDeps } from '../deps';
import { badRequest, conflict, notFound } from '../errors';
import { installationService } from '../installation-service';
import type { RouteTable } from '../route-table';
import { bulkReplaySchema, deliverySchema, listOf, operationSchema } from '../schemas';
import { checkListQuery, isoTime, TIME_MESSAGE } from '../list-query';
import { DELIVERED_EVENT_TYPES } from '../../webhooks/events';

const STATUSES: readonly DeliveryStatus[] = DELIVERY_STATUSES;
/** What the list takes (bench (q) reads its default page size). */
export const LIST_RULES = { ids: ['installation', 'eventId', 'org'], choices: { status: STATUSES, eventType: DELIVERED_EVENT_TYPES }, times: ['since', 'until'], pageSize: { default: 50, max: 200 } } as const;

/** A portal link's receiver sees no workflow runs: the Temporal UI's links and run ids are the operators'. */
function shownTo<T extends { workflow?: unknown; attempts?: { workflow?: unknown }[] }>(caller: Caller, delivery: T): T {
  if (caller.kind !== 'portal') return delivery;
  const { workflow: _workflow, ...rest } = delivery;
  return { ...rest, ...(delivery.attempts && { attempts: delivery.attempts.map(({ workflow: _run, ...attempt }) => attempt) }) } as T;
}

export function deliveryRoutes(routes: RouteTable, deps: ApiDeps): void {
  const store = deps.deliveries;
  const installations = installationService(deps);

  /** A replay goes to the installation as it is now: a deleted one cannot take it (404), a paused one not yet (409). */
  async function replayTarget(caller: Caller, installationId: string) {
    const installation = await installations.load(caller, installationId);
    if (installation.status === 'paused') throw conflict('the installation is paused: resume it, then replay', [{ field: 'installation', message: 'is paused' }]);
    return installation;
  }

  async function load(caller: Caller, id: string): Promise<Delivery> {
    const delivery = isDeliveryId(id) ? await store.get(id) : undefined;
    if (!delivery) throw notFound('delivery');
    const scoped = scopedInstallation(caller);
    if (scoped !== undefined && scoped !== delivery.installationId) throw notFound('delivery');
    if (scoped === undefined) requireMember(caller, delivery.organizationId, 'delivery');
    return delivery;
  }

  routes.add(
    {
      method: 'get',
      path: '/v1/deliveries',
      summary: 'List deliveries, newest first (its installation\'s, with a portal link)',
      access: 'member',
      portal: true,
      query: { installation: 'Installation id', status: STATUSES.join(', '), eventType: `Event type, one of ${DELIVERED_EVENT_TYPES.join(', ')}`, eventId: 'Event id', since: 'RFC 3339 start time, with its offset', until: 'RFC 3339 end time, with its offset', org: 'Organization id (required for the administrator)', limit: `Page size, 1 to ${LIST_RULES.pageSize.max} (${LIST_RULES.pageSize.default} unless given)`, pageToken: 'From the previous page' },
      responses: { 200: { description: 'Deliveries without their attempts', schema: listOf(deliverySchema) } },
    },
    async ({ caller, query }) => {
      const pageSize = checkListQuery(query, LIST_RULES);
      // A portal link lists its installation's deliveries only.
      if (caller.kind === 'portal') query.installation ??= caller.installationId;
      let orgs: string[];
      if (query.installation) {
        orgs = [(await installations.load(caller, query.installation)).target.org];
      } else if (caller.kind === 'admin') {
        if (!query.org) throw badRequest('the administrator lists one organization at a time: give org or installation', [{ field: 'org', message: 'is required' }]);
        orgs = [query.org];
      } else {
        const own = caller.kind === 'member' ? caller.orgs : [];
        orgs = query.org ? own.filter((org) => org === query.org) : own;
      }
      const page = await store.list({ orgs, installation: query.installation, status: query.status as DeliveryStatus | undefined, eventType: query.eventType, eventId: query.eventId, since: query.since === undefined ? undefined : isoTime(query.since), until: query.until === undefined ? undefined : isoTime(query.until) }, pageSize, query.pageToken);
      return { status: 200, body: { ...page, items: page.items.map((item) => shownTo(caller, item)) } };
    },
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/deliveries/:id',
      summary: 'Read a delivery with its payload and every attempt',
      access: 'member',
      portal: true,
      responses: { 200: { description: 'The delivery', schema: deliverySchema }, 404: { description: 'Not found' } },
    },
    async ({ caller, params }) => ({ status: 200, body: shownTo(caller, await load(caller, params.id!)) }),
  );

  routes.add(
    {
      method: 'post',
      path: '/v1/deliveries/:id/replay',
      summary: 'Replay a finished delivery as a new one with the same body and eventId',
      access: 'member',
      portal: true,
      responses: { 202: { description: 'The new delivery id' }, 404: { description: 'No such delivery, or its installation is deleted' }, 409: { description: 'The delivery has not finished, or its installation is paused' } },
    },
    async ({ caller, params }) => {
      const delivery = await load(caller, params.id!);
      if (delivery.status !== 'delivered' && delivery.status !== 'failed') throw conflict(`only delivered or failed deliveries replay; this one is ${delivery.status}`);
      await replayTarget(caller, delivery.installationId);
      return { status: 202, body: { id: await store.replay(delivery) } };
    },
  );

  routes.add<{ dryRun?: boolean; installation: string; status: 'failed'; since?: string; until?: string }>(
    {
      method: 'post',
      path: '/v1/deliveries/replay',
      summary: 'Replay every failed delivery of an installation in a time range (one replay per event), in a background operation: answers its id and how many it will replay',
      access: 'member',
      body: bulkReplaySchema,
      responses: {
        200: { description: 'With dryRun: how many it would replay, nothing started', schema: { type: 'object', required: ['count'], properties: { count: { type: 'integer' } } } },
        202: { description: 'The operation (GET /v1/operations/{id}) and how many it will replay', schema: { type: 'object', required: ['operation', 'count'], properties: { operation: { type: 'string' }, count: { type: 'integer' } } } },
        404: { description: 'No such installation' },
        409: { description: 'The installation is paused' },
      },
    },
    async ({ caller, body }) => {
      const details = (['since', 'until'] as const).filter((field) => body[field] !== undefined && isoTime(body[field]!) === undefined).map((field) => ({ field, message: TIME_MESSAGE }));
      if (details.length) throw badRequest('invalid time range', details);
      const installation = await replayTarget(caller, body.installation);
      const time = (value?: string) => (value === undefined ? undefined : isoTime(value));
      const request = { organizationId: installation.target.org, installationId: installation.id, since: time(body.since), until: time(body.until) };
      if (body.dryRun) return { status: 200, body: { count: await deps.operations.countFailed(request) } };
      const { id, total } = await deps.operations.replayFailed(request);
      return { status: 202, body: { operation: id, count: total } };
    },
  );

  routes.add(
    { method: 'get', path: '/v1/operations/:id', summary: 'Read a background operation: its progress (done, failed, left) and status', access: 'member', responses: { 200: { description: 'The operation', schema: operationSchema }, 404: { description: 'Not found' } } },
    async ({ caller, params }) => ({ status: 200, body: await deps.operations.get(caller, params.id!) }),
  );

  routes.add(
    {
      method: 'post',
      path: '/v1/operations/:id/cancel',
      summary: 'Cancel a running operation: it stops before its next page; what it did stays done',
      access: 'member',
      responses: { 202: { description: 'The operation as it was when asked', schema: operationSchema }, 404: { description: 'Not found' } },
    },
    async ({ caller, params }) => ({ status: 202, body: await deps.operations.cancel(caller, params.id!) }),
  );
}
