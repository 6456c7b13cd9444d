import assert from 'node:assert/strict';
import { freePort } from '../src/temporal/dev-server';
import { install, publishExample } from './support/examples';
import { spaceEvent, TestPlatform, waitFor } from './support/platform';
import { ScriptedReceiver } from './support/receiver';

/**
 * examples/gitbook-style: code written as for GitBook's runtime (JSX components, Logger,
 * RuntimeContext types, an action answering props, events with several handlers), published
 * with the CLI and run in isolates, with its tsconfig still naming @gitbook/runtime as a
 * ported one would.
 */
describe('an integration written as for GitBook, published with the CLI', function () {
  this.timeout(120_000);
  const forwarded = new ScriptedReceiver();
  let platform: TestPlatform;
  let tenant: { org: string; token: string };
  let installation: any;
  let closed = 0;

  const render = (body: Record<string, unknown>) => platform.http('POST', `/v1/installations/${installation.id}/components/link-card`, { token: tenant.token, body });
  const call = async (path: string) => {
    const answer = await fetch(`${installation.urls.publicEndpoint}${path}`);
    return { status: answer.status, body: (await answer.json()) as any };
  };

  before(async function () {
    await forwarded.start();
    // A port nothing listens on, which egress may try: the destination cannot be reached.
    closed = await freePort();
    platform = await new TestPlatform(__filename, { egressAllow: [`127.0.0.1:${new URL(forwarded.url).port}`, `127.0.0.1:${closed}`] }).start();
    tenant = await platform.tenant();
    const name = await publishExample(platform, tenant, 'gitbook-style', {
      files: { 'tsconfig.json': JSON.stringify({ compilerOptions: { jsx: 'react-jsx', jsxImportSource: '@gitbook/runtime', strict: true } }) },
    });
    installation = await install(platform, tenant, name, { greeting: 'Hi', forward_url: forwarded.url }, 'space-1');
  });
  after(async () => Promise.all([platform?.stop(), forwarded.stop()]));

  it('renders its JSX as markup, from an initial state given as a value, with the configuration read from GitBook’s environment shape, and its cache', async function () {
    const answer = await render({ props: {} });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(answer.body, {
      type: 'element',
      state: { clicks: 0 },
      props: {},
      element: {
        type: 'block',
        children: [
          { type: 'text', children: ['Hi', ', ', 'no link yet'] },
          { type: 'button', label: 'Click', onPress: { action: 'click' } },
        ],
      },
    });
    assert.equal(answer.headers.get('cache-control'), 'private, max-age=60');
  });

  it('takes props from an action (link unfurl), state from another, and ends the interaction on a completing one', async function () {
    const unfurled = await render({ props: {}, action: { action: '@link.unfurl', url: 'https://docs.example.com/page' } });
    assert.deepEqual(unfurled.body.props, { url: 'https://docs.example.com/page', title: 'docs.example.com' });
    assert.deepEqual(unfurled.body.element.children[0], { type: 'text', children: ['Hi', ', ', 'docs.example.com'] });
    const clicked = await render({ props: unfurled.body.props, state: { clicks: 2 }, action: { action: 'click' } });
    assert.deepEqual(clicked.body.state, { clicks: 3 });
    assert.deepEqual(clicked.body.element.children[1], { type: 'text', children: ['Clicked ', 3, ' times'] });
    assert.deepEqual((await render({ props: {}, state: { clicks: 7 }, action: { action: 'done' } })).body, { type: 'complete', returnValue: { clicks: 7 } });
  });

  it('gives its routed endpoint GitBook’s installation and spaceInstallation beside SPEC.md’s keys, and a production build', async function () {
    const { status, body } = await call('/environment');
    assert.equal(status, 200);
    assert.equal(body.mode, 'production');
    assert.deepEqual(body.installation.configuration, { greeting: 'Hi', forward_url: forwarded.url });
    assert.equal(body.installation.id, installation.id);
    assert.deepEqual(body.installation.target, { organization: tenant.org });
    assert.equal(body.installation.urls.publicEndpoint, installation.urls.publicEndpoint);
    assert.equal(body.spaceInstallation.space, 'space-1');
    assert.equal(body.spaceInstallation.installation, installation.id);
    assert.deepEqual(body.spaceInstallation.configuration, body.installation.configuration);
    assert.equal(body.siteInstallation, undefined);
    assert.equal(body.contentEndpoint, installation.urls.publicEndpoint, 'where its web frames load');
    assert.equal(body.docs, 'https://docs.example.com/gitbook-style', 'GitBook’s integration object: its external links');
  });

  it('answers its ExposableError with its status, and a GitBook call this platform does not model with an error naming it', async function () {
    assert.deepEqual(await call('/teapot'), { status: 418, body: { error: 'I am a teapot' } });
    const task = await call('/task');
    assert.equal(task.status, 501);
    assert.match(task.body.error, /context\.integration\.queueTask: integration tasks are GitBook’s, which this platform does not model/);
  });

  it('sees a fetch to a destination it cannot reach reject, as fetch does, and one it can reach answer', async function () {
    const unreachable = await call(`/fetch?url=${encodeURIComponent(`http://127.0.0.1:${closed}/`)}`);
    assert.equal(unreachable.body.rejected, true);
    assert.equal(unreachable.body.name, 'TypeError');
    assert.match(unreachable.body.message, /^fetch failed: 127\.0\.0\.1:\d+: connect ECONNREFUSED/);
    assert.deepEqual((await call(`/fetch?url=${encodeURIComponent(forwarded.url)}`)).body, { rejected: false, status: 200 });
  });

  it('runs every handler it gives for an event', async function () {
    const ingest = await platform.ingest(spaceEvent(tenant.org, 'space-1'));
    assert.equal(ingest.status, 202, JSON.stringify(ingest.body));
    const tags = () => forwarded.requests.filter((request) => request.method === 'POST').map((request) => JSON.parse(request.body)).filter((body) => body.eventId === ingest.body.eventId).map((body) => body.tag);
    await waitFor(async () => (tags().length === 2 ? true : undefined), 30_000, 'both handlers');
    assert.deepEqual(tags().sort(), ['first', 'second']);
  });
});
