import { deliveryId } from '../ids';
import { WEBHOOK_INTEGRATION } from '../installations/webhook';
import { eventTargets, serializePayload, type IngestedEvent } from '../webhooks/events';
import { whilePaused, type InstallationSummary } from '../installations/types';
import { RECEIVER_FAILING, type NewDelivery } from '../delivery-log/types';

/** An organization-wide installation hears every event of the organization; others only their own space or site. */
function reaches(installation: InstallationSummary, event: IngestedEvent): boolean {
  const { spaceId, siteId } = eventTargets(event);
  const { space, site } = installation.target;
  if (!space && !site) return true;
  return (space !== undefined && space === spaceId) || (site !== undefined && site === siteId);
}

/**
 * One delivery per installation of the event's organization that it reaches and that takes
 * its type: a webhook that selected it, or an integration whose code handles it and whose
 * scopes allow it. Active ones get attempts, unless `holding` says their receiver has been
 * failing long enough (a `held` record, reason `receiver_failing`, see holdsWhileFailing);
 * paused ones a `held` record when the platform paused them (their receiver failing), a
 * `skipped` one when a member did. A flush reads the installations of all its events'
 * organizations at once: the organization is checked here, per event, so that no event
 * reaches another tenant's installation.
 */
export function planDeliveries(event: IngestedEvent, eventId: string, installations: InstallationSummary[], holding: (installationId: string) => boolean = () => false): NewDelivery[] {
  return installations
    .filter(
      (installation) =>
        installation.target.org === event.organizationId &&
        (installation.status === 'active' || installation.status === 'paused') &&
        installation.events.includes(event.type) &&
        (!event.installationId || event.installationId === installation.id) &&
        reaches(installation, event),
    )
    .map((installation) => ({
      id: deliveryId(eventId, installation.id),
      eventId,
      installationId: installation.id,
      organizationId: installation.target.org,
      eventType: event.type,
      body: serializePayload(event, eventId, installation.id, installation.integration !== WEBHOOK_INTEGRATION),
      url: installation.url,
      ...whilePaused(installation),
      ...(installation.status === 'active' && installation.holdsWhileFailing && holding(installation.id) && { held: true as const, heldReason: RECEIVER_FAILING }),
    }));
}
