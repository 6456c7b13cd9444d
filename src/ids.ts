import { randomBytes } from 'node:crypto';

/** Prefixed ids with a brand, so an installation id never passes where an event id is due. */
type Branded<P extends string> = string & { readonly __brand: P };
export type InstallationId = Branded<'ins'>;
export type EventId = Branded<'evt'>;
export type DeliveryId = Branded<'dlv'>;

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

export const newInstallationId = (): InstallationId => randomId('ins') as InstallationId;
export const newEventId = (): EventId => randomId('evt') as EventId;

/** DESIGN.md §3: a delivery is one event x one installation. */
export function deliveryId(eventId: string, installationId: string, replay?: number): DeliveryId {
  return (replay ? `${eventId}:${installationId}:replay-${replay}` : `${eventId}:${installationId}`) as DeliveryId;
}
