import assert from 'node:assert/strict';
import { createComponent, createIntegration, ExposableError } from '../src/runtime';
import { Fragment, jsx, jsxs } from '../src/runtime/jsx-runtime';

/** The SDK's envelope handling, called as workerd calls it (it is platform code; integrations' own code never runs here). */
const environment = { id: 'ins_1', apiEndpoint: 'http://api', apiTokens: { installation: 'itk_x' }, integration: { name: 'x', version: 1, scopes: [], urls: { publicEndpoint: 'http://api/p' } }, secrets: {}, configuration: {} };

function envelope(event: unknown, body?: string, version = 'v1'): Request {
  const form = new FormData();
  form.set('event', JSON.stringify(event));
  form.set('environment', JSON.stringify(environment));
  // As the platform sends it (src/isolates/integration-runtime.ts).
  if (body !== undefined) form.set('fetch-body', new Blob([body], { type: 'application/octet-stream' }), 'body');
  return new Request(`http://isolate/${version}`, { method: 'POST', body: form });
}

describe('the runtime SDK (envelope dispatch)', function () {
  const counter = createComponent<Record<string, never>, { count: number }>({
    componentId: 'counter',
    initialState: () => ({ count: 0 }),
    action: async (element, action) => (action.action === 'increment' ? { state: { count: element.state.count + 1 } } : {}),
    render: async (element) => ({ type: 'text', text: String(element.state.count) }),
  });
  const integration = createIntegration({
    fetch: async (request) => new Response(`${request.method} ${new URL(request.url).pathname} ${await request.text()}`, { status: 201 }),
    components: [counter],
    events: {
      space_content_updated: async () => undefined,
      installation_setup: async () => {
        throw new ExposableError('not configured yet', 409);
      },
      space_view: async () => {
        throw new Error('secret internals at /srv/app.js:12');
      },
    },
  });

  it('rebuilds the original request for fetch, body included', async function () {
    const answer = await integration.fetch(envelope({ type: 'fetch', request: { method: 'PUT', url: 'http://api/p/sub', headers: { 'x-a': 'b' } } }, 'payload'));
    assert.equal(answer.status, 201);
    assert.equal(await answer.text(), 'PUT /p/sub payload');
  });

  it('gives the fetch handler the caller’s Content-Type, and none when the caller sent none', async function () {
    const echo = createIntegration({ fetch: async (request) => Response.json({ type: request.headers.get('content-type'), body: await request.text() }) });
    const sent = (headers: Record<string, string>) => echo.fetch(envelope({ type: 'fetch', request: { method: 'POST', url: 'http://api/p', headers } }, 'payload')).then((answer) => answer.json());
    assert.deepEqual(await sent({}), { type: null, body: 'payload' });
    assert.deepEqual(await sent({ 'content-type': 'text/csv' }), { type: 'text/csv', body: 'payload' });
  });

  it('answers another envelope version 400', async function () {
    const answer = await integration.fetch(envelope({ type: 'fetch', request: { method: 'GET', url: 'http://api/p', headers: {} } }, undefined, 'v2'));
    assert.equal(answer.status, 400);
    assert.match(((await answer.json()) as { error: string }).error, /unsupported envelope version "v2"/);
  });

  it('renders components (404 for an unknown one) and lets an action change the state', async function () {
    const first = await (await integration.fetch(envelope({ type: 'ui_render', componentId: 'counter', props: {} }))).json();
    assert.deepEqual(first, { type: 'element', state: { count: 0 }, props: {}, element: { type: 'text', text: '0' } });
    const clicked: any = await (await integration.fetch(envelope({ type: 'ui_render', componentId: 'counter', props: {}, state: { count: 4 }, action: { action: 'increment' } }))).json();
    assert.deepEqual(clicked.state, { count: 5 });
    assert.equal((await integration.fetch(envelope({ type: 'ui_render', componentId: 'chart', props: {} }))).status, 404);
  });

  it('dispatches events: 204 handled, 406 not handled, exposable errors with their status, others 500 without a stack', async function () {
    assert.equal((await integration.fetch(envelope({ type: 'space_content_updated', eventId: 'e', installationId: 'i', spaceId: 's' }))).status, 204);
    assert.equal((await integration.fetch(envelope({ type: 'space_gitsync_started', eventId: 'e', installationId: 'i', spaceId: 's' }))).status, 406);
    const exposed = await integration.fetch(envelope({ type: 'installation_setup', eventId: 'e', installationId: 'i', status: 'pending' }));
    assert.deepEqual([exposed.status, await exposed.json()], [409, { error: 'not configured yet' }]);
    const hidden = await integration.fetch(envelope({ type: 'space_view', eventId: 'e', installationId: 'i', spaceId: 's' }));
    const text = await hidden.text();
    assert.equal(hidden.status, 500);
    assert.deepEqual(JSON.parse(text), { error: 'Internal server error' });
    assert.doesNotMatch(text, /srv|app\.js|at /);
  });

  it('answers 400 when there is no fetch handler, and to a malformed envelope', async function () {
    const bare = createIntegration({});
    assert.equal((await bare.fetch(envelope({ type: 'fetch', request: { method: 'GET', url: 'http://api/p', headers: {} } }))).status, 400);
    assert.equal((await bare.fetch(new Request('http://isolate/v1', { method: 'POST', body: 'not multipart' }))).status, 400);
  });

  it('declares what it registers: component ids and handled event types', function () {
    assert.deepEqual(integration.componentIds, ['counter']);
    assert.deepEqual(integration.eventTypes, ['space_content_updated', 'installation_setup', 'space_view']);
  });
});

describe('the JSX runtime (integration-platform/runtime/jsx-runtime)', function () {
  it('makes markup objects: children always an array, flattened, without what conditional JSX leaves; fragments are their children; function tags are called', function () {
    const Title = (props: Record<string, unknown>) => jsx('text', { style: 'bold', children: props.children });
    assert.deepEqual(jsxs('block', { children: [jsx(Title, { children: 'Hi' }), false, null, undefined, [jsx('divider', {}), ['deep']]] }), {
      type: 'block',
      children: [{ type: 'text', style: 'bold', children: ['Hi'] }, { type: 'divider' }, 'deep'],
    });
    assert.deepEqual(jsx(Fragment, { children: [jsx('text', { children: 'a' }), jsx('text', { children: 'b' })] }), [{ type: 'text', children: ['a'] }, { type: 'text', children: ['b'] }]);
    assert.deepEqual(jsx('button', { label: 'Go', onPress: { action: 'go' } }), { type: 'button', label: 'Go', onPress: { action: 'go' } });
  });
});
