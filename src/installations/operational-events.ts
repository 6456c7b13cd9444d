import { deliveryId } from '../ids';
import type { NewDelivery } from '../delivery-log/types';
import type { OperationalEventType } from '../webhooks/event-types';
import { targetKind } from './target';
import { whilePaused, type InstallationPause, type InstallationStatus, type InstallationSummary } from './types';
import { WEBHOOK_INTEGRATION } from './webhook';

/** One of an organization's installations paused or resumed, as its webhook installations that select it are told. */
export interface OperationalEvent {
  type: OperationalEventType;
  eventId: string;
  organizationId: string;
  installation: { id: string; integration: string; status: InstallationStatus; pause?: InstallationPause; resumedAt?: string };
}

/**
 * One delivery per webhook installation of the whole organization that selected the event
 * (the installation the event is about too, held while the platform pauses it). The payload
 * is the event with the receiving installation's id, as every webhook payload carries it.
 */
export function planOperationalDeliveries(event: OperationalEvent, installations: InstallationSummary[]): NewDelivery[] {
  return installations
    .filter((installation) => installation.target.org === event.organizationId && installation.integration === WEBHOOK_INTEGRATION && targetKind(installation.target) === 'organization' && installation.events.includes(event.type))
    .map((installation) => ({
      id: deliveryId(event.eventId, installation.id),
      eventId: event.eventId,
      installationId: installation.id,
      organizationId: event.organizationId,
      eventType: event.type,
      body: JSON.stringify({ type: event.type, eventId: event.eventId, installationId: installation.id, installation: event.installation }),
      url: installation.url,
      ...whilePaused(installation),
    }));
}
