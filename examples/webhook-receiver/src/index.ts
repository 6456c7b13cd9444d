import { createIntegration, type IntegrationContext } from 'integration-platform/runtime';

/** POSTs what the integration heard to its configured forward_url, after the response. */
async function forward(context: IntegrationContext, what: string, payload: unknown): Promise<void> {
  const url = context.environment.configuration.forward_url;
  if (typeof url !== 'string') return;
  await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ what, installationId: context.environment.id, payload }),
  });
}

/** SPEC.md's example receiver: 405 to anything but POST, `{"received": true}` at once, the work after. */
export default createIntegration({
  async fetch(request, context) {
    if (request.method !== 'POST') return new Response('Method not allowed', { status: 405 });
    const body = await request.text();
    context.waitUntil(forward(context, 'fetch', body));
    return Response.json({ received: true });
  },
  events: {
    installation_setup: async (event, context) => forward(context, 'installation_setup', event),
    space_installation_setup: async (event, context) => forward(context, 'space_installation_setup', event),
    space_content_updated: async (event, context) => forward(context, 'space_content_updated', event),
  },
});
