import { randomBytes } from 'node:crypto';

/** Any id the API takes in a path or a query but a delivery's (isDeliveryId). */
export const ID_PATTERN = '^[A-Za-z0-9_.:-]{1,200}$';
const ID = new RegExp(ID_PATTERN);
export const isId = (value: string): boolean => ID.test(value);
/** Event ids name deliveries (`<event>:<installation>`), so they cannot contain ':'. */
export const EVENT_ID_PATTERN = '^[A-Za-z0-9_.-]{1,200}$';
/** Installation ids as newInstallationId makes them. */
export const INSTALLATION_ID = /^ins_[A-Za-z0-9_-]{1,64}$/;
/** Integration names as manifests may give them (the manifest schema's `name`). */
const INTEGRATION_NAME = /^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$/;
export const isIntegrationName = (value: string): boolean => value.length <= 64 && INTEGRATION_NAME.test(value);
/** deliveryId's shape: an event id of up to 200 characters makes one longer than other ids. */
const DELIVERY_ID = new RegExp(`${EVENT_ID_PATTERN.slice(0, -1)}:${INSTALLATION_ID.source.slice(1, -1)}(:replay-[1-9][0-9]{0,15})?$`);
export const isDeliveryId = (value: string): boolean => DELIVERY_ID.test(value);

function randomId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

export const newInstallationId = (): string => randomId('ins');
export const newEventId = (): string => randomId('evt');

/** DESIGN.md §3: a delivery is one event x one installation. */
export function deliveryId(eventId: string, installationId: string, replay?: number): string {
  return replay ? `${eventId}:${installationId}:replay-${replay}` : `${eventId}:${installationId}`;
}
