import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes of delivery workflows: they make deliveries listable and
 * filterable both in the API and in the Temporal UI. Values are ids, never secrets,
 * because search attributes are indexed in clear.
 */
export const InstallationIdKey = defineSearchAttributeKey('InstallationId', SearchAttributeType.KEYWORD);
export const OrganizationIdKey = defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD);
export const EventIdKey = defineSearchAttributeKey('EventId', SearchAttributeType.KEYWORD);
export const EventTypeKey = defineSearchAttributeKey('EventType', SearchAttributeType.KEYWORD);
export const DeliveryStatusKey = defineSearchAttributeKey('DeliveryStatus', SearchAttributeType.KEYWORD);

export const searchAttributeKeys = [InstallationIdKey, OrganizationIdKey, EventIdKey, EventTypeKey, DeliveryStatusKey];

