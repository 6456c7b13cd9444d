import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OAuthStates } from '../src/delivery-log/oauth-states';
import { install, publishExample } from './support/examples';
import { TestPlatform } from './support/platform';

/** A provider on 127.0.0.1: /authorize approves at once, /token exchanges a code it issued. */
class TestProvider {
  url = '';
  readonly exchanges: Record<string, string>[] = [];
  private readonly codes = new Set<string>();
  private server?: http.Server;

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', this.url);
      if (url.pathname === '/authorize') {
        const code = `code-${this.codes.size + 1}`;
        this.codes.add(code);
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state')!);
        res.writeHead(302, { location: back.toString() }).end();
        return;
      }
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk));
      req.on('end', () => {
        const form = Object.fromEntries(new URLSearchParams(body));
        this.exchanges.push(form);
        // A provider whose token endpoint answers a web page (a login wall, an outage page).
        if (form.code === 'answer-html') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
        // A second app registration (client-2) gets tokens that expire at once, with refresh tokens.
        if (form.grant_type === 'refresh_token') return void res.writeHead(form.refresh_token === 'ref_1' ? 200 : 400, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'tok_refreshed', expires_in: 3600 }));
        const good = this.codes.delete(form.code!) && ['client-1', 'client-2'].includes(form.client_id!) && form.client_secret === 'secret-1' && form.grant_type === 'authorization_code';
        const expiring = form.client_id === 'client-2' ? { refresh_token: 'ref_1', expires_in: 1 } : {};
        res.writeHead(good ? 200 : 400, { 'content-type': 'application/json' }).end(JSON.stringify(good ? { access_token: `tok_${form.code}`, token_type: 'bearer', ...expiring } : { error: 'invalid_grant' }));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  stop(): void {
    this.server?.closeAllConnections();
    this.server?.close();
  }
}

const follow = (url: string) => fetch(url, { redirect: 'manual' });

describe('OAuth with createOAuthHandler, end to end', function () {
  this.timeout(120_000);
  const provider = new TestProvider();
  let platform: TestPlatform;
  let second: TestPlatform;
  let tenant: { org: string; token: string };
  let name = '';

  before(async function () {
    await provider.start();
    const egressAllow = [`127.0.0.1:${new URL(provider.url).port}`];
    platform = await new TestPlatform(__filename, { egressAllow }).start();
    // A second API process of the same deployment: same key, same log.
    second = await new TestPlatform(__filename, { egressAllow, worker: false, adminToken: platform.adminToken, databaseUrl: platform.databaseUrl }).start();
    tenant = await platform.tenant();
    name = await publishExample(platform, tenant, 'oauth', { env: { OAUTH_CLIENT_ID: 'client-1', OAUTH_CLIENT_SECRET: 'secret-1', OAUTH_PROVIDER_URL: provider.url } });
  });
  after(async () => {
    await Promise.all([platform?.stop(), second?.stop()]);
    provider.stop();
  });

  /** A member starts the connection; the button's callback_url redirects to the provider, with its state. */
  async function connect(installation: any, through = installation.urls.publicEndpoint): Promise<URL> {
    const started = await platform.http('POST', `/v1/installations/${installation.id}/oauth/connect`, { token: tenant.token });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    assert.equal(started.body.url, `${installation.urls.publicEndpoint}/oauth?connect=${encodeURIComponent(started.body.connect)}`);
    const start = await follow(`${through}/oauth?connect=${encodeURIComponent(started.body.connect)}`);
    assert.equal(start.status, 302);
    return new URL(start.headers.get('location')!);
  }

  it('redirects to the provider with client_id, redirect_uri, response_type, scope, prompt and a signed state', async function () {
    const installation = await install(platform, tenant, name);
    const authorize = await connect(installation);
    assert.equal(`${authorize.origin}${authorize.pathname}`, `${provider.url}/authorize`);
    assert.equal(authorize.searchParams.get('client_id'), 'client-1');
    assert.equal(authorize.searchParams.get('redirect_uri'), `${installation.urls.publicEndpoint}/oauth`);
    assert.equal(authorize.searchParams.get('response_type'), 'code');
    assert.equal(authorize.searchParams.get('scope'), 'read');
    assert.equal(authorize.searchParams.get('prompt'), 'consent');
    assert.match(authorize.searchParams.get('state')!, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  });

  it('exchanges the code, stores the credentials encrypted under oauth_credentials, masked when read; the state works once, in any API process', async function () {
    const installation = await install(platform, tenant, name);
    const approved = await follow((await connect(installation)).toString());
    // The provider's redirect comes back through the second API process.
    const callback = approved.headers.get('location')!.replace(platform.api.url, second.api.url);
    const done = await fetch(callback);
    assert.equal(done.status, 200, await done.clone().text());
    assert.match(await done.text(), /Connected/);
    assert.deepEqual(provider.exchanges.at(-1), { grant_type: 'authorization_code', code: new URL(callback).searchParams.get('code'), redirect_uri: `${second.api.url}/v1/integrations/${name}/installations/${installation.id}/public/oauth`, client_id: 'client-1', client_secret: 'secret-1' });

    const read = await platform.http('GET', `/v1/installations/${installation.id}`, { token: tenant.token });
    assert.deepEqual(read.body.configuration.oauth_credentials, { access_token: '********' });
    const stored = (await platform.stores.installations.getMany([installation.id])).get(installation.id)!;
    assert.match(String((stored.configuration.oauth_credentials as any).access_token), /^tok_code-/);
    const raw = await platform.stores.db.selectFrom('installations').select('configuration').where('id', '=', installation.id).executeTakeFirstOrThrow();
    assert.doesNotMatch(raw.configuration, /tok_code/);

    const replayed = await fetch(callback.replace(second.api.url, platform.api.url));
    assert.equal(replayed.status, 400);
    assert.match(await replayed.text(), /The connection failed[\s\S]*used already/);
  });

  it('refuses a forged state and another installation’s state with 400', async function () {
    const [one, two] = [await install(platform, tenant, name), await install(platform, tenant, name)];
    const forged = await fetch(`${one.urls.publicEndpoint}/oauth?code=code-x&state=${encodeURIComponent('e30.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')}`);
    assert.equal(forged.status, 400);
    assert.match(await forged.text(), /not one the platform issued/);
    const foreignState = (await connect(two)).searchParams.get('state')!;
    const foreign = await fetch(`${one.urls.publicEndpoint}/oauth?code=code-x&state=${encodeURIComponent(foreignState)}`);
    assert.equal(foreign.status, 400);
    assert.match(await foreign.text(), /belongs to another installation/);
  });

  it('shows a clear error page when the exchange fails (extractCredentials throws), and stores nothing', async function () {
    const installation = await install(platform, tenant, name);
    const state = (await connect(installation)).searchParams.get('state')!;
    const failed = await fetch(`${installation.urls.publicEndpoint}/oauth?code=never-issued&state=${encodeURIComponent(state)}`);
    assert.equal(failed.status, 502);
    assert.match(failed.headers.get('content-type')!, /text\/html/);
    assert.match(await failed.text(), /The connection failed[\s\S]*the provider refused the exchange \(HTTP 400\)/);
    const read = await platform.http('GET', `/v1/installations/${installation.id}`, { token: tenant.token });
    assert.equal(read.body.configuration.oauth_credentials, undefined);
  });

  it('shows a generic error page, not the error’s own text, when something not meant for people fails (a provider answering HTML)', async function () {
    const installation = await install(platform, tenant, name);
    const state = (await connect(installation)).searchParams.get('state')!;
    const failed = await fetch(`${installation.urls.publicEndpoint}/oauth?code=answer-html&state=${encodeURIComponent(state)}`);
    assert.equal(failed.status, 500);
    const page = await failed.text();
    assert.match(page, /The connection failed[\s\S]*Nothing was stored; try again/);
    assert.doesNotMatch(page, /JSON|Unexpected token|SyntaxError/);
  });

  it('lets nobody but the integration set oauth_credentials, and no token but its own issue states', async function () {
    const installation = await install(platform, tenant, name);
    const byHand = await platform.http('PATCH', `/v1/installations/${installation.id}/configuration`, { token: tenant.token, body: { oauth_credentials: { access_token: 'mine' } } });
    assert.equal(byHand.status, 400);
    // Nor when installing.
    const installedWith = await platform.http('POST', `/v1/integrations/${name}/installations`, { token: tenant.token, body: { target: { org: tenant.org }, configuration: { oauth_credentials: { access_token: 'mine' } } } });
    assert.equal(installedWith.status, 400, JSON.stringify(installedWith.body));
    assert.deepEqual(installedWith.body.details.map((detail: { field: string }) => detail.field), ['configuration.oauth_credentials']);
    assert.equal((await platform.http('POST', `/v1/installations/${installation.id}/oauth/state`, { token: tenant.token, body: { connect: 'x' } })).status, 403);
  });

  it('starts only from a member of the installation’s organization: the public endpoint alone, another installation’s ticket or a spent one refuse', async function () {
    const [one, two] = [await install(platform, tenant, name), await install(platform, tenant, name)];
    const anonymous = await follow(`${one.urls.publicEndpoint}/oauth`);
    assert.equal(anonymous.status, 400);
    assert.match(await anonymous.text(), /connection ticket is not one the platform issued/);
    const ticketOf = async (installation: any) => (await platform.http('POST', `/v1/installations/${installation.id}/oauth/connect`, { token: tenant.token })).body.connect as string;
    const foreign = await follow(`${one.urls.publicEndpoint}/oauth?connect=${encodeURIComponent(await ticketOf(two))}`);
    assert.equal(foreign.status, 400);
    assert.match(await foreign.text(), /connection ticket belongs to another installation/);
    const ticket = await ticketOf(one);
    assert.equal((await follow(`${one.urls.publicEndpoint}/oauth?connect=${encodeURIComponent(ticket)}`)).status, 302);
    const again = await follow(`${one.urls.publicEndpoint}/oauth?connect=${encodeURIComponent(ticket)}`);
    assert.equal(again.status, 400);
    assert.match(await again.text(), /used already/);
    const stranger = await platform.tenant();
    assert.equal((await platform.http('POST', `/v1/installations/${one.id}/oauth/connect`, { token: stranger.token })).status, 404);
  });

  it('runs GitBook’s style too: a required connect button, URLs made from the installation, extractCredentials given the parsed answer, getOAuthToken refreshing an expired token', async function () {
    const gitbookStyle = `import { createIntegration, createOAuthHandler, getOAuthToken, type OAuthResponse } from 'integration-platform/runtime';
const config = (context) => ({
  clientId: 'client-2',
  clientSecret: context.environment.secrets.CLIENT_SECRET,
  authorizeURL: (installation) => context.environment.secrets.PROVIDER_URL + '/authorize?for=' + installation.id,
  accessTokenURL: context.environment.secrets.PROVIDER_URL + '/token',
  extractCredentials: (response: OAuthResponse) => ({
    configuration: {
      oauth_credentials: { access_token: response.access_token, refresh_token: response.refresh_token, expires_at: new Date(Date.now() + response.expires_in * 1000).toISOString() },
      connected_with: response.token_type,
    },
  }),
});
export default createIntegration({
  async fetch(request, context) {
    const path = new URL(request.url).pathname;
    if (path.endsWith('/oauth')) return createOAuthHandler(config(context), { replace: false })(request, context);
    if (path.endsWith('/token')) return Response.json({ token: await getOAuthToken(context.environment.installation.configuration.oauth_credentials, config(context), context) });
    return new Response('Not found', { status: 404 });
  },
});
`;
    const styled = await publishExample(platform, tenant, 'oauth', { env: { OAUTH_CLIENT_ID: 'client-2', OAUTH_CLIENT_SECRET: 'secret-1', OAUTH_PROVIDER_URL: provider.url }, edit: (manifest) => [manifest.replace('    properties:\n', '    properties:\n      connected_with: { type: string, title: Token type }\n').replace('secrets:', '    required: [connect]\nsecrets:'), gitbookStyle] });
    const installation = await install(platform, tenant, styled);
    assert.equal(installation.status, 'pending', 'a required button holds no value until its flow has stored credentials');
    const authorize = await connect(installation);
    assert.equal(authorize.searchParams.get('for'), installation.id);
    const done = await fetch((await follow(authorize.toString())).headers.get('location')!);
    assert.match(await done.text(), /Connected/);
    assert.equal(provider.exchanges.at(-1)!.client_id, 'client-2');
    const stored = () => platform.stores.installations.getMany([installation.id]).then((found) => found.get(installation.id)!.configuration as any);
    assert.equal((await stored()).connected_with, 'bearer');
    assert.equal((await platform.http('GET', `/v1/installations/${installation.id}`, { token: tenant.token })).body.status, 'active', 'connected, it is active');
    assert.equal((await stored()).oauth_credentials.refresh_token, 'ref_1');
    // Issued to expire in 1 s: within getOAuthToken's 10 s, so it is refreshed, and the refresh stored.
    const token = await fetch(`${installation.urls.publicEndpoint}/token`);
    assert.deepEqual(await token.json(), { token: 'tok_refreshed' });
    assert.deepEqual(provider.exchanges.at(-1), { grant_type: 'refresh_token', refresh_token: 'ref_1', client_id: 'client-2', client_secret: 'secret-1' });
    assert.equal((await stored()).oauth_credentials.access_token, 'tok_refreshed');
    assert.equal((await stored()).oauth_credentials.refresh_token, 'ref_1', 'a refresh without a new refresh token keeps the old one');
  });

  it('refuses an expired state (10 minutes), and a connection ticket where a state is due', async function () {
    const states = new OAuthStates(process.env.TEST_ENCRYPTION_KEY!, platform.stores.db);
    const old = states.issue('ins_x', 'state', Date.now() - 11 * 60 * 1000);
    assert.equal(await states.spend(old, 'state', 'ins_x'), 'the state expired; start the connection again');
    assert.equal(await states.spend(states.issue('ins_x', 'connect'), 'state', 'ins_x'), 'the state is not one the platform issued');
    assert.equal(await states.spend(states.issue('ins_x', 'state'), 'state', 'ins_x'), undefined);
  });
});
