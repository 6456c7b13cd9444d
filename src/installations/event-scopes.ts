/**
 * Which scope an integration needs to receive each event (docs/decisions/runtime.md); null: never
 * gated. SPEC.md: "Depending on the event an integration handles, the matching scope
 * permission may be required."
 */
export const EVENT_SCOPES: Record<string, string | null> = {
  installation_setup: null,
  space_installation_setup: null,
  space_view: 'space:metadata:read',
  space_content_updated: 'space:content:read',
  space_visibility_updated: 'space:metadata:read',
  space_gitsync_started: 'space:git:sync',
  space_gitsync_completed: 'space:git:sync',
  site_view: 'site:views:read',
  page_feedback: 'page:feedback:read',
};

/** The handled events an integration with these scopes receives. */
export function deliverableEvents(handled: readonly string[], scopes: readonly string[]): string[] {
  return handled.filter((type) => type in EVENT_SCOPES && (EVENT_SCOPES[type] === null || scopes.includes(EVENT_SCOPES[type]!)));
}
