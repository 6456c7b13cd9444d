import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { newEventId } from '../../ids';
import { eventSchemas, WEBHOOK_EVENT_TYPES, type IngestedEvent, type WebhookEventType } from '../../webhooks/events';
import { eventWorkflow, eventWorkflowId, type EventRecord } from '../../workflows/event';
import { installationsQuery, organizationWorkflowId } from '../../workflows/organization';
import type { ApiDeps } from '../deps';
import { badRequest } from '../errors';
import { planDeliveries } from '../fanout';
import { DeliveryStore } from '../delivery-store';
import { PageTokens } from '../page-tokens';
import type { RouteTable } from '../route-table';
import { ingestAnswerSchema } from '../schemas';
import { parse } from '../validation';

function parseEvent(body: unknown): IngestedEvent {
  const type = (body as { type?: unknown } | null)?.type;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the event must be a JSON object', [{ field: '(body)', message: 'must be an object' }]);
  if (typeof type !== 'string' || !WEBHOOK_EVENT_TYPES.includes(type as WebhookEventType)) {
    throw badRequest(`unknown event type ${JSON.stringify(type)}; known: ${WEBHOOK_EVENT_TYPES.join(', ')}`, [{ field: 'type', message: `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}` }]);
  }
  return parse<IngestedEvent>(eventSchemas[type as WebhookEventType], body, `${type} event`);
}

export function eventRoutes(routes: RouteTable, { client, taskQueue, adminToken }: ApiDeps): void {
  const deliveries = new DeliveryStore(client, taskQueue, new PageTokens(adminToken));
  routes.add<IngestedEvent>(
    {
      method: 'post',
      path: '/v1/events',
      summary: 'Ingest one platform event and fan it out to the webhook installations that selected it',
      access: 'admin',
      body: { oneOf: Object.values(eventSchemas) },
      parseBody: parseEvent,
      responses: { 202: { description: 'Accepted; a repeated eventId answers the first ingest again', schema: ingestAnswerSchema }, 400: { description: 'Invalid event' } },
    },
    async ({ body: event }) => {
      const eventId = event.eventId ?? newEventId();
      const installations = await client.workflow.getHandle(organizationWorkflowId(event.organizationId)).query(installationsQuery);
      let record: EventRecord = { eventId, organizationId: event.organizationId, eventType: event.type, deliveries: planDeliveries(event, eventId, installations) };
      try {
        await client.workflow.start(eventWorkflow, { workflowId: eventWorkflowId(eventId), taskQueue, args: [record], workflowIdReusePolicy: 'REJECT_DUPLICATE' });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        // A repeat: the first fan-out stands, whatever the installations are now.
        record = await client.workflow.getHandle<typeof eventWorkflow>(eventWorkflowId(eventId)).result();
      }
      // 202 only once every delivery is durably started. Starting is idempotent, so a client
      // retrying an unanswered request completes a fan-out that a crash interrupted.
      await Promise.all(record.deliveries.map((delivery) => deliveries.start(delivery)));
      return { status: 202, body: { eventId, deliveries: record.deliveries.map((delivery) => delivery.id) } };
    },
  );
}
