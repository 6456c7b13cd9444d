import * as wf from '@temporalio/workflow';
import { deliverySearchAttributes, deliveryWorkflow, type DeliveryInput } from './delivery';

export interface EventRecord {
  eventId: string;
  organizationId: string;
  eventType: string;
  deliveries: DeliveryInput[];
}

export interface IngestAnswer {
  eventId: string;
  deliveries: string[];
}

export const eventWorkflowId = (eventId: string): string => `event/${eventId}`;

/**
 * The durable record of one ingested event and its fan-out. Its id makes a repeated
 * eventId start nothing new; it starts one independent delivery workflow per installation.
 */
export async function eventWorkflow(record: EventRecord): Promise<IngestAnswer> {
  await Promise.all(
    record.deliveries.map((delivery) =>
      wf.startChild(deliveryWorkflow, {
        workflowId: delivery.id,
        args: [delivery],
        parentClosePolicy: 'ABANDON',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: deliverySearchAttributes(delivery, 'pending'),
      }),
    ),
  );
  return { eventId: record.eventId, deliveries: record.deliveries.map((delivery) => delivery.id) };
}
