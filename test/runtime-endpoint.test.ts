import assert from 'node:assert/strict';
import http from 'node:http';
import { TestPlatform, waitFor } from './support/platform';
import { install, publishExample, startWithForwarding } from './support/examples';
import { ScriptedReceiver } from './support/receiver';

/** Integration code through the real API, isolates and Temporal: public endpoints, components, the API binding, egress. */
describe('the integration runtime: public endpoint, components, API binding, egress', function () {
  this.timeout(120_000);
  const forwarded = new ScriptedReceiver();
  let platform: TestPlatform;
  let tenant: { org: string; token: string };
  let receiver = '';
  let installation: any;


  /** The example receiver with a GET answer of the test's (`handler`, TypeScript in the `fetch` handler), installed; its JSON answer. */
  async function probe(handler: string): Promise<Record<string, any>> {
    const name = await publishExample(platform, tenant, 'webhook-receiver', {
      edit: (manifest, script) => [manifest, script.replace("if (request.method !== 'POST') return new Response('Method not allowed', { status: 405 });", `if (request.method === 'GET') { ${handler} }`)],
    });
    const prober = await install(platform, tenant, name, { forward_url: forwarded.url });
    return { ...((await (await fetch(prober.urls.publicEndpoint)).json()) as Record<string, unknown>), installationId: prober.id };
  }

  before(async function () {
    ({ platform, tenant, receiver } = await startWithForwarding(__filename, forwarded));
    installation = await install(platform, tenant, receiver, { forward_url: forwarded.url });
  });
  after(async () => Promise.all([platform?.stop(), forwarded.stop()]));

  describe('SPEC.md’s example receiver, through its public endpoint', function () {
    it('answers 405 "Method not allowed" to anything but POST', async function () {
      const answer = await fetch(installation.urls.publicEndpoint);
      assert.equal(answer.status, 405);
      assert.equal(await answer.text(), 'Method not allowed');
    });

    it('answers {"received": true} at once and does its work after the response (waitUntil), through the egress guard', async function () {
      const answer = await fetch(`${installation.urls.publicEndpoint}/hooks/github?x=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ping":1}' });
      assert.equal(answer.status, 200);
      assert.match(answer.headers.get('content-type')!, /application\/json/);
      assert.deepEqual(await answer.json(), { received: true });
      await waitFor(async () => (forwarded.requests.some((r) => JSON.parse(r.body).payload === '{"ping":1}') ? true : undefined), 10_000, 'the forward');
    });

    it('gives the code the URL as the caller sent it: an encoded ? # or / under the endpoint stays encoded', async function () {
      const name = await publishExample(platform, tenant, 'webhook-receiver', {
        edit: (manifest, script) => [manifest, script.replace("if (request.method !== 'POST') return new Response('Method not allowed', { status: 405 });", "if (request.method === 'GET') return Response.json({ url: request.url });")],
      });
      const echo = await install(platform, tenant, name, { forward_url: forwarded.url });
      for (const tail of ['/a%3Fq=1?k=v', '/a%23frag?k=v', '/a%2Fb', '/', '/x/y?z']) {
        const seen = (await (await fetch(`${echo.urls.publicEndpoint}${tail}`)).json()) as { url: string };
        assert.equal(seen.url, `${echo.urls.publicEndpoint}${tail}`, tail);
      }
    });

    it('gives the code header values as the Fetch standard has them: each byte one character (UTF-8 café arrives as cafÃ©)', async function () {
      const name = await publishExample(platform, tenant, 'webhook-receiver', {
        edit: (manifest, script) => [manifest, script.replace("if (request.method !== 'POST') return new Response('Method not allowed', { status: 405 });", "if (request.method === 'GET') return Response.json({ name: request.headers.get('x-name') });")],
      });
      const echo = await install(platform, tenant, name, { forward_url: forwarded.url });
      // Node writes a header string's characters as bytes: these are the UTF-8 bytes of "café".
      const utf8Bytes = Buffer.from('café', 'utf8').toString('latin1');
      const seen = await new Promise<string>((resolve, reject) => {
        http.get(echo.urls.publicEndpoint, { headers: { 'x-name': utf8Bytes } }, (response) => {
          let body = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => resolve(JSON.parse(body).name));
        }).on('error', reject);
      });
      assert.deepEqual([...seen].map((char) => char.charCodeAt(0)), [...Buffer.from('café', 'utf8')]);
    });

    it('keeps the console’s session from the code both ways, and sandboxes what it answers (the console’s origin is its too)', async function () {
      const { cookie, installationId } = await probe(
        "return new Response(JSON.stringify({ cookie: request.headers.get('cookie') }), { headers: [['content-type', 'application/json'], ['set-cookie', 'platform_session=chosen; Path=/'], ['set-cookie', 'theme=dark; Path=/']] });",
      );
      assert.equal(cookie, null, 'probe() sends no cookie');
      const endpoint = (await platform.http('GET', `/v1/installations/${installationId}`, { token: tenant.token })).body.urls.publicEndpoint;
      const answer = await fetch(endpoint, { headers: { cookie: 'theme=light; platform_session=s3cret; __Host-platform_session=s3cret' } });
      assert.deepEqual(await answer.json(), { cookie: 'theme=light' }, 'the session cookie is not the code’s to see');
      assert.deepEqual(answer.headers.getSetCookie(), ['theme=dark; Path=/'], 'nor to set');
      assert.match(answer.headers.get('content-security-policy')!, /^sandbox allow-scripts/);
    });

    it('builds the environment itself: a caller’s environment part changes nothing', async function () {
      const form = new FormData();
      form.set('event', JSON.stringify({ type: 'fetch', request: { method: 'POST', url: 'http://evil/', headers: {} } }));
      form.set('environment', JSON.stringify({ id: 'ins_spoofed', configuration: { forward_url: 'http://127.0.0.1:1/' } }));
      const answer = await fetch(installation.urls.publicEndpoint, { method: 'POST', body: form });
      assert.equal(answer.status, 200);
      // Found among all forwards: the installation's own events (installation_setup) may come after it.
      const forward = await waitFor(async () => forwarded.requests.map((request) => JSON.parse(request.body)).find((sent) => typeof sent.payload === 'string' && sent.payload.includes('ins_spoofed')), 10_000, 'the forward');
      assert.equal(forward.installationId, installation.id, 'the environment is the platform’s, not the caller’s');
    });

    it('refuses a body over 10 MiB with 413, and answers 404 for a foreign or unknown installation', async function () {
      const big = await fetch(installation.urls.publicEndpoint, { method: 'POST', body: Buffer.alloc(10 * 1024 * 1024 + 1) });
      assert.equal(big.status, 413);
      assert.equal((await fetch(installation.urls.publicEndpoint.replace(installation.id, 'ins_nope'))).status, 404);
      assert.equal((await fetch(installation.urls.publicEndpoint.replace(`/${receiver}/`, '/webhook/'))).status, 404);
    });
  });

  describe('UI components (ui_render)', function () {
    let counter: any;
    before(async function () {
      const name = await publishExample(platform, tenant, 'counter');
      counter = await install(platform, tenant, name);
    });
    const render = (body: unknown, token = tenant.token) => platform.http('POST', `/v1/installations/${counter.id}/components/counter`, { token, body });

    it('renders the initial state, lets an action change it, and round-trips the state', async function () {
      const first = await render({ props: {} });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.deepEqual(first.body.state, { count: 0 });
      assert.equal(first.body.type, 'element');
      assert.equal(first.body.element.type, 'block');
      assert.deepEqual(first.body.element.children[1], { type: 'button', label: 'Click me', onPress: { action: 'increment' } });
      const clicked = await render({ props: { step: 2 }, state: first.body.state, action: { action: 'increment' } });
      assert.deepEqual(clicked.body.state, { count: 2 });
      assert.deepEqual(clicked.body.props, { step: 2 });
      const again = await render({ props: {}, state: clicked.body.state });
      assert.equal(again.body.element.children[0].text, 'Clicked 2 times');
    });

    it('answers 404 for an unknown component, and for another organization', async function () {
      assert.equal((await platform.http('POST', `/v1/installations/${counter.id}/components/chart`, { token: tenant.token, body: { props: {} } })).status, 404);
      const other = await platform.tenant();
      assert.equal((await render({ props: {} }, other.token)).status, 404);
    });

    it('answers 403 installation_paused while the installation is paused, as its public endpoint does, and renders again once resumed', async function () {
      assert.equal((await platform.http('POST', `/v1/installations/${counter.id}/pause`, { token: tenant.token })).status, 200);
      try {
        const paused = await render({ props: {} });
        assert.equal(paused.status, 403, JSON.stringify(paused.body));
        assert.equal(paused.body.error, 'installation_paused');
        assert.equal((await fetch(counter.urls.publicEndpoint)).status, 403);
        // A non-member still learns nothing of it.
        assert.equal((await render({ props: {} }, (await platform.tenant()).token)).status, 404);
      } finally {
        assert.equal((await platform.http('POST', `/v1/installations/${counter.id}/resume`, { token: tenant.token })).status, 200);
      }
      assert.equal((await render({ props: {} })).status, 200);
    });

    it('answers 502 when code that skips the SDK renders something that is no JSON', async function () {
      const name = `raw-${tenant.org}`.slice(0, 60);
      const manifest = [`name: ${name}`, 'title: Raw', 'description: Answers HTML.', `organization: ${tenant.org}`, 'visibility: private', 'scopes: []', 'script: src/index.js'].join('\n');
      const script = "export default { __platformIntegration: true, componentIds: ['page'], eventTypes: [], async fetch() { return new Response('<html>hello</html>'); } };";
      assert.equal((await platform.http('POST', '/v1/integrations', { token: tenant.token, body: { manifest, script } })).status, 201);
      const raw = await install(platform, tenant, name);
      const answer = await platform.http('POST', `/v1/installations/${raw.id}/components/page`, { token: tenant.token, body: { props: {} } });
      assert.equal(answer.status, 502, JSON.stringify(answer.body));
      assert.equal(answer.body.error, 'integration_failed');
    });
  });

  describe('the platform API, through the binding, with the installation token', function () {
    it('reads and configures its own installation; another installation is 404, other routes 403', async function () {
      const other = await install(platform, tenant, receiver, { forward_url: forwarded.url });
      const probed = await probe(`
        const probe = async (call: () => Promise<unknown>) => call().then((value) => ({ ok: value }), (error) => ({ status: error.status, message: error.message }));
        return Response.json({
          own: await probe(() => context.api.installation.get()),
          configured: await probe(() => context.api.installation.updateConfiguration({ forward_url: ${JSON.stringify(forwarded.url)} + '?configured' })),
          foreign: await probe(() => context.api.request('GET', '/v1/installations/${other.id}')),
          listing: await probe(() => context.api.request('GET', '/v1/installations')),
          token: context.environment.apiTokens.installation.slice(0, 4),
        });`);
      assert.equal(probed.token, 'itk_');
      assert.equal(probed.own.ok.id, probed.installationId);
      assert.equal(probed.configured.ok.configuration.forward_url, `${forwarded.url}?configured`);
      assert.equal(probed.foreign.status, 404);
      assert.equal(probed.listing.status, 403);
      const read = await platform.http('GET', `/v1/installations/${probed.installationId}`, { token: tenant.token });
      assert.equal(read.body.configuration.forward_url, `${forwarded.url}?configured`);
    });

    it('refuses the installation token while its installation is paused (its code is not called then either), and takes it again once resumed', async function () {
      const probed = await probe(`return Response.json({ token: context.environment.apiTokens.installation });`);
      const asCode = async () => (await platform.http('PATCH', `/v1/installations/${probed.installationId}/configuration`, { token: probed.token, body: { oauth_credentials: { access_token: 'kept' } } })).status;
      assert.equal(await asCode(), 200);
      assert.equal((await platform.http('POST', `/v1/installations/${probed.installationId}/pause`, { token: tenant.token })).status, 200);
      assert.equal(await asCode(), 401);
      assert.equal((await platform.http('POST', `/v1/installations/${probed.installationId}/resume`, { token: tenant.token })).status, 200);
      assert.equal(await asCode(), 200);
    });

    it('carries nothing but /v1/ calls to the API itself: not the codec endpoint or /metrics (they trust loopback), not another host, not a public endpoint (its own would call itself)', async function () {
      const probed = await probe(`
        const status = (method: string, path: string, body?: unknown) => context.api.request(method, path, body).then(() => 200, (error) => error.status ?? 'no status: ' + error.message);
        return Response.json({
          decode: await status('POST', '/codec/decode', { payloads: [] }),
          dotted: await status('POST', '/v1/../codec/decode', { payloads: [] }),
          metrics: await status('GET', '/metrics'),
          elsewhere: await status('GET', '//127.0.0.1:${new URL(forwarded.url).port}/via-binding'),
          ownPublic: await status('POST', new URL(context.environment.urls.publicEndpoint).pathname + '/again', {}),
          shouted: await status('POST', new URL(context.environment.urls.publicEndpoint).pathname.replace('/public', '/PUBLIC'), {}),
        });`);
      assert.deepEqual([probed.decode, probed.dotted, probed.metrics, probed.elsewhere, probed.ownPublic, probed.shouted], [403, 403, 403, 403, 403, 403]);
      assert.ok(!forwarded.requests.some((request) => request.url.includes('via-binding')), 'the binding reached another host');
    });
  });

  describe('egress', function () {
    it('refuses what PLATFORM_EGRESS_ALLOW does not list, the platform’s ports, and raw sockets', async function () {
      const outside = await new ScriptedReceiver().start();
      try {
        const seen = await probe(`
          const attempt = async (call: () => Promise<unknown>) => call().then((value) => value, (error) => 'refused: ' + error.message);
          const status = (url: string) => attempt(async () => (await fetch(url)).status);
          return Response.json({
            unlisted: await status(${JSON.stringify(outside.url)}),
            api: await status(${JSON.stringify(`${platform.api.url}/healthz`)}),
            temporal: await status('http://${process.env.TEST_TEMPORAL_ADDRESS}/'),
            metadata: await status('http://169.254.169.254/latest/meta-data'),
            listed: await status(${JSON.stringify(forwarded.url)}),
            socket: await attempt(async () => { const { connect } = await import('cloudflare:sockets'); await connect({ hostname: '127.0.0.1', port: ${new URL(forwarded.url).port} }).opened; return 'opened'; }),
          });`);
        assert.equal(seen.unlisted, 403, 'a loopback port not in PLATFORM_EGRESS_ALLOW');
        assert.equal(seen.api, 403, 'the platform API port');
        assert.equal(seen.temporal, 403, 'the Temporal port');
        assert.equal(seen.metadata, 403, 'link-local');
        assert.equal(seen.listed, 200, 'the listed host:port');
        assert.match(String(seen.socket), /^refused/);
        assert.equal(outside.requests.length, 0);
      } finally {
        await outside.stop();
      }
    });
  });
});
