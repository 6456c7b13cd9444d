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

/** A field of the event at `path` (`events[1]` in a batch): `events[1].type`, or `type` alone. */
const fieldAt = (path: string, name: string): string => (path ? `${path}.${name}` : name);

function parseEvent(body: unknown, path = ''): IngestedEvent {
  const type = (body as { type?: unknown } | null)?.type;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the event must be a JSON object', [{ field: path || '(body)', message: 'must be an object' }]);
  if ((PLATFORM_OWN_EVENT_TYPES as readonly unknown[]).includes(type)) {
    throw badRequest(`${type as string} is the platform's own event: installations and components fire it, ingest does not take it`, [{ field: fieldAt(path, 'type'), message: 'is fired by the platform itself' }]);
  }
  if (typeof type !== 'string' || !INGESTED_EVENT_TYPES.includes(type as IngestedEventType)) {
    throw badRequest(`unknown event type ${JSON.stringify(type)}; known: ${INGESTED_EVENT_TYPES.join(', ')}`, [{ field: fieldAt(path, 'type'), message: `must be one of ${INGESTED_EVENT_TYPES.join(', ')}` }]);
  }
  return parse<IngestedEvent>(eventSchemas[type as IngestedEventType], body, `${type} event`, path);
}

const batchSchema = { type: 'object', required: ['events'], additionalProperties: false, properties: { events: { type: 'array', minItems: 1, maxItems: MAX_BATCH_EVENTS } } };

export function eventRoutes(routes: RouteTable, { ingest, organizations }: ApiDeps): void {
  /** An event of an unknown organization is refused (404), not silently fanned out to nobody. */
  async function checkOrganization(event: IngestedEvent, path = ''): Promise<void> {
    if (!(await organizations.exists(event.organizationId).catch((err) => Promise.reject(fromEngine(err))))) {
      throw notFound(`organization ${event.organizationId}`, [{ field: fieldAt(path, 'organizationId'), message: 'is not a known organization' }]);
    }
  }

  function submit(event: IngestedEvent, deadline: number, path = '') {
    return ingest.ingest(event, deadline).catch((err) => {
      if (err instanceof EventIdTakenError) return Promise.reject(conflict(err.message, [{ field: fieldAt(path, 'eventId'), message: 'is taken by an earlier event' }]));
      const refused = fromEngine(err);
      if ((refused as { status?: number }).status === 503) ingestUnavailable.inc();
      return Promise.reject(refused);
    });
  }

  routes.add<IngestedEvent>(
    {
      method: 'post',
      path: '/v1/events',
      ownDeadline: true,
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
    async ({ body: event }) => {
      const deadline = Date.now() + INGEST_DEADLINE_MS;
      await checkOrganization(event);
      return { status: 202, body: await submit(event, deadline) };
    },
  );

  routes.add<{ events: unknown[] }>(
    {
      method: 'post',
      path: '/v1/events/batch',
      ownDeadline: true,
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
      // Each event goes to ingest once its organization is known, and after any earlier event
      // of the batch with the same eventId has gone: of two, the earlier wins, whatever this
      // process knew of their organizations, and one slow organization holds back only its own.
      const turns = new Map<string, Promise<void>>();
      const results = await Promise.all(
        body.events.map(async (raw, i) => {
          const path = `events[${i}]`;
          let gone: (() => void) | undefined;
          try {
            const event = parseEvent(raw, path);
            const earlier = event.eventId === undefined ? undefined : turns.get(event.eventId);
            if (event.eventId !== undefined) turns.set(event.eventId, new Promise<void>((resolve) => (gone = resolve)));
            await checkOrganization(event, path);
            await earlier;
            // submit queues the event before it awaits anything: the next of its eventId may go.
            const answer = submit(event, deadline, path);
            gone?.();
            return await answer;
          } catch (err) {
            return errorBody(err as Error);
          } finally {
            gone?.();
          }
        }),
      );
      // "Not known to be accepted" for the batch as a whole only when none was and the engine did not take one.
      const noneAccepted = results.every((result) => 'error' in result);
      if (noneAccepted && results.some((result) => 'error' in result && result.error === 'unavailable')) throw fromEngine(new Error('no event of the batch was accepted'));
      return { status: 202, body: { results } };
    },
  );
}
