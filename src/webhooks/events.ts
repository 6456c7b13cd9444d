import type { JSONSchemaType, SchemaObject } from 'ajv';

/** The webhook event types of SPEC.md's Events section. */
export const WEBHOOK_EVENT_TYPES = ['space_content_updated', 'site_view', 'page_feedback'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

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
export type IngestedEvent = SpaceContentUpdated | SiteView | PageFeedback;

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
  eventId: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_.-]+$', nullable: true },
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

/** Typed above against the TypeScript types; one schema per type serves ajv and OpenAPI. */
export const eventSchemas: Record<WebhookEventType, SchemaObject> = {
  space_content_updated: spaceContentUpdated,
  site_view: siteView,
  page_feedback: pageFeedback,
};

/** The payload fields of SPEC.md for each type, in its order; nothing else is sent. */
const payloadFields: Record<WebhookEventType, readonly string[]> = {
  space_content_updated: ['eventId', 'type', 'spaceId', 'installationId', 'revisionId'],
  site_view: ['eventId', 'type', 'siteId', 'installationId', 'visitor', 'url', 'referrer'],
  page_feedback: ['eventId', 'type', 'siteId', 'spaceId', 'installationId', 'pageId', 'feedback', 'visitor', 'url', 'referrer'],
};

/** The exact bytes every attempt of one delivery sends. */
export function serializePayload(event: IngestedEvent, eventId: string, installationId: string): string {
  const source: Record<string, unknown> = { ...event, eventId, installationId };
  return JSON.stringify(Object.fromEntries(payloadFields[event.type].map((field) => [field, source[field]])));
}

/** Which installation targets an event reaches: its site, its space, and the whole organization. */
export function eventTargets(event: IngestedEvent): { spaceId?: string; siteId?: string } {
  switch (event.type) {
    case 'space_content_updated':
      return { spaceId: event.spaceId };
    case 'site_view':
      return { siteId: event.siteId };
    case 'page_feedback':
      return { siteId: event.siteId };
  }
}
