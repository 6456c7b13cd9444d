/** The event types installations select: imported by workflows, so nothing here reaches Node's modules. */

/** The webhook event types of SPEC.md's Events section. */
export const WEBHOOK_EVENT_TYPES = ['space_content_updated', 'site_view', 'page_feedback'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/**
 * The platform's operational events, to an organization's webhook installations that select
 * them: one of its installations paused or resumed (see docs/decisions/installations.md).
 */
export const OPERATIONAL_EVENT_TYPES = ['installation_paused', 'installation_resumed'] as const;
export type OperationalEventType = (typeof OPERATIONAL_EVENT_TYPES)[number];
export type SelectableEventType = WebhookEventType | OperationalEventType;
