import type { JSONSchemaType, SchemaObject } from 'ajv';
import { EVENT_ID_PATTERN } from '../ids';

import { OPERATIONAL_EVENT_TYPES, WEBHOOK_EVENT_TYPES, type WebhookEventType } from './event-types';
export * from './event-types';

/** Runtime events (SPEC.md) the platform fires from outside, through ingest. */
export const RUNTIME_EVENT_TYPES = ['space_view', 'space_content_updated', 'space_visibility_updated', 'space_gitsync_started', 'space_gitsync_completed'] as const;
/** Every type ingest takes. */
export const INGESTED_EVENT_TYPES = [...new Set([...WEBHOOK_EVENT_TYPES, ...RUNTIME_EVENT_TYPES])] as const;
export type IngestedEventType = (typeof INGESTED_EVENT_TYPES)[number];
/** An installation's setup events, to its own integration code through the delivery log. */
const SETUP_EVENT_TYPES = ['installation_setup', 'space_installation_setup'] as const;
/** The platform's own events: fired by installations and components, never ingested. */
export const PLATFORM_OWN_EVENT_TYPES = [...SETUP_EVENT_TYPES, 'ui_render'] as const;
/** The catalog of what a delivery may carry, as the delivery log's filter takes it (a component's ui_render is a call, never delivered). */
export const DELIVERED_EVENT_TYPES: readonly string[] = [...INGESTED_EVENT_TYPES, ...OPERATIONAL_EVENT_TYPES, ...SETUP_EVENT_TYPES];

export interface Visitor {
  anonymousId: string;
  userAgent: string;
  ip: string;
  cookies: Record<string, string>;
}

interface Common {
  eventId?: string;
  /** Set per delivery; when given at ingest it narrows the fan-out to that installation. */
  installationId?: string;
  /** Not part of the payload: the platform's word on which organization owns the space or site. */
  organizationId: string;
}
export interface SpaceContentUpdated extends Common {
  type: 'space_content_updated';
  spaceId: string;
  revisionId: string;
}
export interface SiteView extends Common {
  type: 'site_view';
  siteId: string;
  visitor: Visitor;
  url: string;
  referrer: string;
}
export interface PageFeedback extends Common {
  type: 'page_feedback';
  siteId: string;
  spaceId: string;
  pageId: string;
  feedback: { rating: string; comment: string };
  visitor: Visitor;
  url: string;
  referrer: string;
}
export interface SpaceView extends Common {
  type: 'space_view';
  spaceId: string;
  pageId?: string;
  visitor?: Visitor;
}
export interface SpaceVisibilityUpdated extends Common {
  type: 'space_visibility_updated';
  spaceId: string;
  visibility: string;
}
export interface SpaceGitSyncStarted extends Common {
  type: 'space_gitsync_started';
  spaceId: string;
  commitId?: string;
}
export interface SpaceGitSyncCompleted extends Common {
  type: 'space_gitsync_completed';
  spaceId: string;
  commitId?: string;
  state: 'success' | 'failure';
}
export type IngestedEvent = SpaceContentUpdated | SiteView | PageFeedback | SpaceView | SpaceVisibilityUpdated | SpaceGitSyncStarted | SpaceGitSyncCompleted;

const str = { type: 'string', minLength: 1 } as const;
const visitor: JSONSchemaType<Visitor> = {
  type: 'object',
  required: ['anonymousId', 'userAgent', 'ip', 'cookies'],
  additionalProperties: false,
  properties: {
    anonymousId: { type: 'string' },
    userAgent: { type: 'string' },
    ip: { type: 'string' },
    cookies: { type: 'object', additionalProperties: { type: 'string' }, required: [] },
  },
};
const common = {
  eventId: { type: 'string', minLength: 1, maxLength: 200, pattern: EVENT_ID_PATTERN, nullable: true },
  installationId: { type: 'string', minLength: 1, nullable: true },
  organizationId: str,
} as const;

const spaceContentUpdated: JSONSchemaType<SpaceContentUpdated> = {
  type: 'object',
  required: ['type', 'organizationId', 'spaceId', 'revisionId'],
  additionalProperties: false,
  properties: { ...common, type: { type: 'string', const: 'space_content_updated' }, spaceId: str, revisionId: str },
};
const siteView: JSONSchemaType<SiteView> = {
  type: 'object',
  required: ['type', 'organizationId', 'siteId', 'visitor', 'url', 'referrer'],
  additionalProperties: false,
  properties: { ...common, type: { type: 'string', const: 'site_view' }, siteId: str, visitor, url: str, referrer: { type: 'string' } },
};
const pageFeedback: JSONSchemaType<PageFeedback> = {
  type: 'object',
  required: ['type', 'organizationId', 'siteId', 'spaceId', 'pageId', 'feedback', 'visitor', 'url', 'referrer'],
  additionalProperties: false,
  properties: {
    ...common,
    type: { type: 'string', const: 'page_feedback' },
    siteId: str,
    spaceId: str,
    pageId: str,
    feedback: {
      type: 'object',
      required: ['rating', 'comment'],
      additionalProperties: false,
      properties: { rating: { type: 'string' }, comment: { type: 'string' } },
    },
    visitor,
    url: str,
    referrer: { type: 'string' },
  },
};

const optionalStr = { type: 'string', minLength: 1, nullable: true } as const;
const spaceView: JSONSchemaType<SpaceView> = {
  type: 'object',
  required: ['type', 'organizationId', 'spaceId'],
  additionalProperties: false,
  properties: { ...common, type: { type: 'string', const: 'space_view' }, spaceId: str, pageId: optionalStr, visitor: { ...visitor, nullable: true } },
};
const spaceVisibilityUpdated: JSONSchemaType<SpaceVisibilityUpdated> = {
  type: 'object',
  required: ['type', 'organizationId', 'spaceId', 'visibility'],
  additionalProperties: false,
  properties: { ...common, type: { type: 'string', const: 'space_visibility_updated' }, spaceId: str, visibility: str },
};
const spaceGitSyncStarted: JSONSchemaType<SpaceGitSyncStarted> = {
  type: 'object',
  required: ['type', 'organizationId', 'spaceId'],
  additionalProperties: false,
  properties: { ...common, type: { type: 'string', const: 'space_gitsync_started' }, spaceId: str, commitId: optionalStr },
};
const spaceGitSyncCompleted: JSONSchemaType<SpaceGitSyncCompleted> = {
  type: 'object',
  required: ['type', 'organizationId', 'spaceId', 'state'],
  additionalProperties: false,
  properties: { ...common, type: { type: 'string', const: 'space_gitsync_completed' }, spaceId: str, commitId: optionalStr, state: { type: 'string', enum: ['success', 'failure'] } },
};

/** Typed above against the TypeScript types; one schema per type serves ajv, OpenAPI and `/schemas/events.json`. */
export const eventSchemas: Record<IngestedEventType, SchemaObject> = {
  space_content_updated: spaceContentUpdated,
  site_view: siteView,
  page_feedback: pageFeedback,
  space_view: spaceView,
  space_visibility_updated: spaceVisibilityUpdated,
  space_gitsync_started: spaceGitSyncStarted,
  space_gitsync_completed: spaceGitSyncCompleted,
};

/** The payload fields of SPEC.md for each type, in its order; nothing else is sent. */
const payloadFields: Record<WebhookEventType, readonly string[]> = {
  space_content_updated: ['eventId', 'type', 'spaceId', 'installationId', 'revisionId'],
  site_view: ['eventId', 'type', 'siteId', 'installationId', 'visitor', 'url', 'referrer'],
  page_feedback: ['eventId', 'type', 'siteId', 'spaceId', 'installationId', 'pageId', 'feedback', 'visitor', 'url', 'referrer'],
};

/**
 * The exact bytes every attempt of one delivery sends: SPEC.md's payload fields for a
 * webhook; for integration code, the event as ingested without the organization.
 */
export function serializePayload(event: IngestedEvent, eventId: string, installationId: string, forIntegration = false): string {
  const source: Record<string, unknown> = { ...event, eventId, installationId };
  if (forIntegration) {
    const { organizationId: _organizationId, ...payload } = source;
    return JSON.stringify(payload);
  }
  return JSON.stringify(Object.fromEntries(payloadFields[event.type as WebhookEventType].map((field) => [field, source[field]])));
}

/** Which installation targets an event reaches: its site, its space, and the whole organization. */
export function eventTargets(event: IngestedEvent): { spaceId?: string; siteId?: string } {
  switch (event.type) {
    case 'site_view':
    case 'page_feedback':
      return { siteId: event.siteId };
    default:
      return { spaceId: event.spaceId };
  }
}
