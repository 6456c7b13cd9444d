import { randomBytes } from 'node:crypto';

/** Prefixed ids with a brand, so an installation id never passes where an event id is due. */
type Branded<P extends string> = string & { readonly __brand: P };
export type InstallationId = Branded<'ins'>;
export type EventId = Branded<'evt'>;
export type DeliveryId = Branded<'dlv'>;

function randomId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

export const newInstallationId = (): InstallationId => randomId('ins') as InstallationId;
export const newEventId = (): EventId => randomId('evt') as EventId;

/** DESIGN.md §3: a delivery is one event x one installation. */
export function deliveryId(eventId: string, installationId: string, replay?: number): DeliveryId {
  return (replay ? `${eventId}:${installationId}:replay-${replay}` : `${eventId}:${installationId}`) as DeliveryId;
}
