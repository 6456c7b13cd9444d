import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { TestPlatform } from './support/platform';
import { fixtureBundle, fixtureManifest } from './support/publishing';

describe('publishing integrations and their visibility', function () {
  const platform = new TestPlatform(__filename);
  let a: { org: string; token: string };
  let b: { org: string; token: string };
  let script = '';
  const suffix = Date.now().toString(36);
  const names = { private: `priv-${suffix}`, unlisted: `unl-${suffix}`, public: `pub-${suffix}` };
  let link = '';

  const publish = (token: string, manifest: string, extra: Record<string, unknown> = {}) => platform.http('POST', '/v1/integrations', { token, body: { manifest, script, ...extra } });

  before(async function () {
    [script] = await Promise.all([fixtureBundle(), platform.start()]);
    [a, b] = await Promise.all([platform.tenant(), platform.tenant()]);
    for (const [visibility, name] of Object.entries(names)) {
      const answer = await publish(a.token, fixtureManifest(name, a.org, visibility));
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      assert.deepEqual(answer.body, { name, version: 1 });
    }
    link = (await platform.http('GET', `/v1/integrations/${names.unlisted}/install-link`, { token: a.token })).body.token;
  });
  after(() => platform.stop());

  describe('publishing', function () {
    it('stores a new immutable version on every publish', async function () {
      const again = await publish(a.token, fixtureManifest(names.public, a.org, 'public'));
      assert.deepEqual(again.body, { name: names.public, version: 2 });
      assert.equal((await platform.http('GET', `/v1/integrations/${names.public}`, { token: a.token })).body.latestVersion, 2);
    });

    it('gives concurrent publishes of one integration distinct versions', async function () {
      const answers = await Promise.all([1, 2, 3].map(() => publish(a.token, fixtureManifest(names.private, a.org, 'private'))));
      assert.deepEqual(answers.map((answer) => answer.status), [201, 201, 201]);
      assert.deepEqual(answers.map((answer) => answer.body.version).sort(), [2, 3, 4]);
      assert.equal((await platform.http('GET', `/v1/integrations/${names.private}`, { token: a.token })).body.latestVersion, 4);
    });

    it('answers odd asset and secret names with 400s, not 500s', async function () {
      const icon = await publish(a.token, fixtureManifest(`odd-${suffix}`, a.org, 'private', 'icon: constructor'));
      assert.equal(icon.status, 400);
      assert.deepEqual(icon.body.details.map((d: any) => d.field), ['icon']);
      const secrets = await publish(a.token, fixtureManifest(`odd-${suffix}`, a.org, 'private'), { secrets: { toString: 'x' } });
      assert.deepEqual(secrets.body.details.map((d: any) => d.field), ['secrets.toString']);
    });

    it('accepts the organization by subdomain as well as by id', async function () {
      // An organization whose subdomain is not its id, so that only a lookup by subdomain finds it.
      const org = await platform.admin('POST', '/v1/orgs', { id: `bysub-${suffix}`, subdomain: `docs-${suffix}`, title: 'By subdomain' });
      assert.equal(org.status, 201, JSON.stringify(org.body));
      const member = await platform.admin('POST', '/v1/users', { id: `bysub-user-${suffix}`, orgs: [`bysub-${suffix}`] });
      const answer = await publish(member.body.token, fixtureManifest(`sub-${suffix}`, `docs-${suffix}`, 'private'));
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      const stored = await platform.http('GET', `/v1/integrations/sub-${suffix}`, { token: member.body.token });
      assert.equal(stored.body.ownerOrg, `bysub-${suffix}`, "stored under the organization's id");
      assert.equal((await publish(b.token, fixtureManifest(`sub2-${suffix}`, `docs-${suffix}`, 'private'))).status, 404, 'a subdomain of an organization the caller is not in');
    });

    it('keeps names unique across organizations: 409', async function () {
      const answer = await publish(b.token, fixtureManifest(names.public, b.org, 'public'));
      assert.equal(answer.status, 409);
      assert.match(answer.body.message, /is not available/);
      assert.equal((await publish(a.token, fixtureManifest('webhook', a.org, 'public'))).status, 409);
    });

    it('refuses publishing for an organization the caller is not in: 404', async function () {
      assert.equal((await publish(b.token, fixtureManifest(`x-${suffix}`, a.org, 'public'))).status, 404);
    });

    it('answers a broken manifest with every error, its path, line and column', async function () {
      const answer = await publish(a.token, fixtureManifest(`bad-${suffix}`, a.org, 'secret', 'colour: red'));
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.body.details.map((d: any) => [d.field, d.line]), [['visibility', 5], ['colour', 20]]);
      assert.ok(answer.body.details.every((d: any) => d.column >= 1 && d.message));
    });

    it('loads the script: blocks must name its components, its default export must come from createIntegration', async function () {
      const missing = await publish(a.token, fixtureManifest(`blk-${suffix}`, a.org, 'private').replace('  - id: counter', '  - id: chart'));
      assert.equal(missing.status, 400);
      assert.deepEqual(missing.body.details.map((d: any) => [d.field, d.line]), [['blocks[0].id', 8]]);
      assert.match(missing.body.details[0].message, /registers no component "chart"; it registers: counter/);
      const notAnIntegration = await publish(a.token, fixtureManifest(`raw-${suffix}`, a.org, 'private'), { script: 'export default {}' });
      assert.deepEqual(notAnIntegration.body.details, [{ field: 'script', message: 'the default export does not come from createIntegration()' }]);
    });

    it('refuses a bundle over 1 MiB with a clear error', async function () {
      const answer = await publish(a.token, fixtureManifest(`big-${suffix}`, a.org, 'private'), { script: `${script}\n//${'x'.repeat(1024 * 1024)}` });
      assert.equal(answer.status, 413);
      assert.match(answer.body.message, /the script bundle is \d+ bytes; the limit is 1048576 \(1 MiB\)/);
    });

    it('needs a value for every secret the manifest lists, and no other', async function () {
      const manifest = fixtureManifest(`sec-${suffix}`, a.org, 'private', 'secrets:\n  CLIENT_ID: ${{ env.CLIENT_ID }}');
      const missing = await publish(a.token, manifest, { secrets: { OTHER: 'x' } });
      assert.deepEqual(missing.body.details.map((d: any) => d.field), ['secrets.CLIENT_ID', 'secrets.OTHER']);
      assert.equal((await publish(a.token, manifest, { secrets: { CLIENT_ID: 'id-123' } })).status, 201);
    });

    it('serves the manifest JSON Schema the CLI and server validate with', async function () {
      const served = (await platform.http('GET', '/schemas/platform-manifest.json')).body;
      assert.deepEqual(served, JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'schema', 'platform-manifest.schema.json'), 'utf8')));
    });
  });

  describe('reading', function () {
    it('lists public integrations to everyone and private and unlisted ones to their owners only', async function () {
      const ownList = (await platform.http('GET', '/v1/integrations', { token: a.token })).body.items.map((i: any) => i.name);
      const otherList = (await platform.http('GET', '/v1/integrations', { token: b.token })).body.items.map((i: any) => i.name);
      for (const name of Object.values(names)) assert.ok(ownList.includes(name), name);
      assert.ok(otherList.includes(names.public) && otherList.includes('webhook'));
      assert.ok(!otherList.includes(names.private) && !otherList.includes(names.unlisted));
    });

    it('reads unlisted ones with the install link only, private ones never, from another organization', async function () {
      const read = (name: string, query = '') => platform.http('GET', `/v1/integrations/${name}${query}`, { token: b.token });
      assert.equal((await read(names.public)).status, 200);
      assert.equal((await read(names.private)).status, 404);
      assert.equal((await read(names.private, `?installLink=${link}`)).status, 404);
      assert.equal((await read(names.unlisted)).status, 404);
      assert.equal((await read(names.unlisted, '?installLink=inl_wrong')).status, 404);
      assert.equal((await read(names.unlisted, `?installLink=${link}`)).body.name, names.unlisted);
      assert.equal((await platform.http('GET', `/v1/integrations/${names.unlisted}/install-link`, { token: b.token })).status, 404);
    });
  });

  describe('installing: every cell of the visibility table', function () {
    const install = (token: string, org: string, name: string, installLink?: string) =>
      platform.http('POST', `/v1/integrations/${name}/installations`, { token, body: { target: { org }, configuration: { api_key: 'k' }, installLink } });
    const table: [keyof typeof names, 'owner' | 'other' | 'other with link', number][] = [
      ['private', 'owner', 201], ['private', 'other', 404], ['private', 'other with link', 404],
      ['unlisted', 'owner', 201], ['unlisted', 'other', 404], ['unlisted', 'other with link', 201],
      ['public', 'owner', 201], ['public', 'other', 201], ['public', 'other with link', 201],
    ];
    for (const [visibility, who, status] of table) {
      it(`${visibility}, ${who}: ${status}`, async function () {
        const [token, org] = who === 'owner' ? [a.token, a.org] : [b.token, b.org];
        const answer = await install(token, org, names[visibility], who === 'other with link' ? link : undefined);
        assert.equal(answer.status, status, JSON.stringify(answer.body));
        if (status === 201) assert.equal(answer.body.status, 'active');
      });
    }
  });

  describe('installations of a published integration', function () {
    it('stay pending until required is filled, refuse wrong types and enums, then turn active', async function () {
      const created = await platform.http('POST', `/v1/integrations/${names.public}/installations`, { token: b.token, body: { target: { org: b.org, space: 'sp-1' } } });
      assert.equal(created.status, 201);
      assert.equal(created.body.status, 'pending');
      assert.equal(created.body.version, 2);
      const id = created.body.id;
      const wrong = await platform.http('PATCH', `/v1/installations/${id}/configuration`, { token: b.token, body: { api_key: 5, mode: 'turbo', other: 1 } });
      assert.equal(wrong.status, 400);
      assert.deepEqual(wrong.body.details.map((d: any) => d.field).sort(), ['configuration.api_key', 'configuration.mode', 'configuration.other']);
      const active = await platform.http('PATCH', `/v1/installations/${id}/configuration`, { token: b.token, body: { api_key: 'key-1', mode: 'fast' } });
      assert.equal(active.body.status, 'active');
    });

    it('a site installation follows the site configuration', async function () {
      const created = await platform.http('POST', `/v1/integrations/${names.public}/installations`, { token: b.token, body: { target: { org: b.org, site: 'site-1' }, configuration: { theme: 'dark' } } });
      assert.equal(created.body.status, 'active');
      const refused = await platform.http('POST', `/v1/integrations/${names.public}/installations`, { token: b.token, body: { target: { org: b.org, site: 'site-2' }, configuration: { api_key: 'k' } } });
      assert.equal(refused.status, 400);
      assert.deepEqual(refused.body.details.map((d: any) => d.field), ['configuration.api_key']);
    });
  });
});
