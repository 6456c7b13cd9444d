import type { DeliveryInput } from './delivery';

export interface EventRecord {
  eventId: string;
  organizationId: string;
  eventType: string;
  deliveries: DeliveryInput[];
}

export const eventWorkflowId = (eventId: string): string => `event/${eventId}`;

/**
 * The durable record of one ingested event and its planned fan-out. Its id, under
 * REJECT_DUPLICATE, makes a repeated eventId start nothing new; it ends at once, and the
 * API starts the deliveries it names before it answers 202 (see routes/events.ts).
 */
export async function eventWorkflow(record: EventRecord): Promise<EventRecord> {
  return record;
}
