import { eventSchemas, INGESTED_EVENT_TYPES, PLATFORM_OWN_EVENT_TYPES, type IngestedEvent, type IngestedEventType } from '../../webhooks/events';
import type { ApiDeps } from '../deps';
import { badRequest, conflict, errorBody, fromEngine, notFound } from '../errors';
import type { RouteTable } from '../route-table';
import { batchIngestAnswerSchema, ingestAnswerSchema } from '../schemas';
import { parse } from '../validation';
import { ingestUnavailable } from '../../metrics';
import { EventIdTakenError, INGEST_DEADLINE_MS } from '../../ingest/ingest-service';

/** Events one batch ingest takes at most. */
export const MAX_BATCH_EVENTS = 500;

function parseEvent(body: unknown, prefix = ''): IngestedEvent {
  const type = (body as { type?: unknown } | null)?.type;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the event must be a JSON object', [{ field: prefix || '(body)', message: 'must be an object' }]);
  if ((PLATFORM_OWN_EVENT_TYPES as readonly unknown[]).includes(type)) {
    throw badRequest(`${type as string} is the platform's own event: installations and components fire it, ingest does not take it`, [{ field: `${prefix}type`, message: 'is fired by the platform itself' }]);
  }
  if (typeof type !== 'string' || !INGESTED_EVENT_TYPES.includes(type as IngestedEventType)) {
    throw badRequest(`unknown event type ${JSON.stringify(type)}; known: ${INGESTED_EVENT_TYPES.join(', ')}`, [{ field: `${prefix}type`, message: `must be one of ${INGESTED_EVENT_TYPES.join(', ')}` }]);
  }
  return parse<IngestedEvent>(eventSchemas[type as IngestedEventType], body, `${type} event`);
}

const batchSchema = { type: 'object', required: ['events'], additionalProperties: false, properties: { events: { type: 'array', minItems: 1, maxItems: MAX_BATCH_EVENTS } } };

export function eventRoutes(routes: RouteTable, { ingest, organizations }: ApiDeps): void {
  /**
   * An event of an unknown organization is refused (404), not silently fanned out to nobody.
   * Whatever it waits for, it answers by the request's deadline (503 past it).
   */
  async function accept(event: IngestedEvent, deadline: number) {
    if (!(await organizations.exists(event.organizationId, deadline).catch((err) => Promise.reject(fromEngine(err))))) throw notFound(`organization ${event.organizationId}`);
    return ingest.ingest(event, deadline).catch((err) => {
      if (err instanceof EventIdTakenError) return Promise.reject(conflict(err.message));
      const refused = fromEngine(err);
      if ((refused as { status?: number }).status === 503) ingestUnavailable.inc();
      return Promise.reject(refused);
    });
  }

  routes.add<IngestedEvent>(
    {
      method: 'post',
      path: '/v1/events',
      summary: 'Ingest one platform event; 202 once the engine holds its fan-out',
      access: 'admin',
      body: { oneOf: Object.values(eventSchemas) },
      parseBody: parseEvent,
      responses: {
        202: { description: 'Accepted; a repeated eventId answers the first ingest again and starts nothing', schema: ingestAnswerSchema },
        400: { description: 'Invalid event' },
        404: { description: 'No such organization' },
        409: { description: 'The eventId is taken by an earlier event of another organization or type' },
        503: { description: 'Not known to be accepted (the engine did not answer within 2 s): retry with the same eventId' },
      },
    },
    async ({ body: event }) => ({ status: 202, body: await accept(event, Date.now() + INGEST_DEADLINE_MS) }),
  );

  routes.add<{ events: unknown[] }>(
    {
      method: 'post',
      path: '/v1/events/batch',
      summary: `Ingest up to ${MAX_BATCH_EVENTS} events; one result per event, in order`,
      access: 'admin',
      body: batchSchema,
      bodyLimit: '5mb',
      responses: {
        202: { description: 'Each result is {eventId, deliveries} or the error body for that event', schema: batchIngestAnswerSchema },
        400: { description: 'Not a batch' },
        503: { description: 'No event is known to be accepted: retry them with their eventIds' },
      },
    },
    async ({ body }) => {
      const deadline = Date.now() + INGEST_DEADLINE_MS;
      const results = await Promise.all(
        body.events.map(async (raw, i) => {
          try {
            return await accept(parseEvent(raw, `events[${i}].`), deadline);
          } catch (err) {
            return errorBody(err as Error);
          }
        }),
      );
      const unavailable = results.every((result) => 'error' in result && result.error === 'unavailable');
      if (unavailable) throw fromEngine(new Error('no event of the batch was accepted'));
      return { status: 202, body: { results } };
    },
  );
}
