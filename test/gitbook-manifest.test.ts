import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from './support/cli';
import { EXAMPLES, install, publishExample } from './support/examples';
import { TestPlatform } from './support/platform';

/** A script registering the components the manifests below name. */
const SCRIPT = `import { createComponent, createIntegration } from 'integration-platform/runtime';
const plain = (componentId) => createComponent({ componentId, render: async () => ({ type: 'text', text: componentId }) });
export default createIntegration({ components: [plain('card'), plain('config')] });
`;

/** The head of a manifest; `name` and `organization` are set by publishExample. */
const head = ['name: x', 'title: Ported', 'description: Carries GitBook fields.', 'organization: x', 'visibility: private', 'scopes: []', 'script: src/index.ts', 'blocks:', '  - id: card', '    title: Card'];

/** GitBook's manifest fields doing what they do there, through the CLI, the API and the installation's workflow. */
describe('GitBook’s manifest fields', function () {
  this.timeout(120_000);
  let platform: TestPlatform;
  let tenant: { org: string; token: string };
  /** `head` with the name and organization publishExample gave, then `lines`. */
  const publish = (lines: string[]) =>
    publishExample(platform, tenant, 'counter', {
      edit: (given) => [[...head.map((line) => (/^(name|organization):/.test(line) ? new RegExp(`^${line.split(':')[0]}: .*$`, 'm').exec(given)![0] : line)), ...lines].join('\n'), SCRIPT],
    });
  const installInto = (name: string, target: Record<string, string>, configuration: Record<string, unknown> = {}) =>
    platform.http('POST', `/v1/integrations/${name}/installations`, { token: tenant.token, body: { target: { org: tenant.org, ...target }, configuration } });

  before(async function () {
    platform = await new TestPlatform(__filename).start();
    tenant = await platform.tenant();
  });
  after(async () => platform?.stop());

  it('target limits where it installs: a site integration installs on a site or the whole organization, not on a space', async function () {
    const name = await publish(['target: site']);
    const refused = await installInto(name, { space: 'sp' });
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.body.details, [{ field: 'target', message: "installs on an organization or a site (its manifest's target: site), not on a space" }]);
    assert.equal((await installInto(name, { site: 'si' })).status, 201);
    assert.equal((await installInto(name, {})).status, 201);
    assert.equal((await platform.http('GET', `/v1/integrations/${name}`, { token: tenant.token })).body.target, 'site');
  });

  it('configurations.space: a space installation needs the space’s properties beside the account’s; an organization’s needs the account’s alone', async function () {
    const name = await publish([
      'configurations:',
      '  account:',
      '    properties:',
      '      greeting: { type: string }',
      '    required: [greeting]',
      '  space:',
      '    properties:',
      '      channel: { type: string }',
      '    required: [channel]',
    ]);
    const space = await installInto(name, { space: 'sp' }, { greeting: 'hi' });
    assert.equal(space.body.status, 'pending');
    const filled = await platform.http('PATCH', `/v1/installations/${space.body.id}/configuration`, { token: tenant.token, body: { channel: '#docs' } });
    assert.equal(filled.body.status, 'active');
    assert.equal((await installInto(name, {}, { greeting: 'hi' })).body.status, 'active');
    const refused = await installInto(name, {}, { greeting: 'hi', channel: '#docs' });
    assert.deepEqual(refused.body.details.map((detail: any) => detail.field), ['configuration.channel']);
  });

  it('a configuration rendered by a component takes what its code stores', async function () {
    const name = await publish(['configurations:', '  account:', '    componentId: config']);
    const installed = await installInto(name, {}, { anything: { nested: [1, 2] }, flag: true });
    assert.equal(installed.status, 201, JSON.stringify(installed.body));
    assert.deepEqual(installed.body.configuration, { anything: { nested: [1, 2] }, flag: true });
    assert.equal(installed.body.status, 'active');
  });

  it('takes urlUnfurl and markdown on blocks, and shows them with the integration', async function () {
    const name = await publish(['    urlUnfurl: [https://example.com/]', '    markdown:', '      codeblock: card', '      body: content']);
    const read = await platform.http('GET', `/v1/integrations/${name}`, { token: tenant.token });
    assert.deepEqual(read.body.blocks, [{ id: 'card', title: 'Card', urlUnfurl: ['https://example.com/'], markdown: { codeblock: 'card', body: 'content' } }]);
  });

  it('envs: `--env <name>` merges that environment’s part over the manifest at check and publish; an unknown one is refused', async function () {
    const other = await platform.tenant();
    const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'platform-envs-')), 'ported');
    cpSync(path.join(EXAMPLES, 'counter'), dir, { recursive: true });
    const name = `ported-${Math.random().toString(36).slice(2, 8)}`;
    writeFileSync(path.join(dir, 'src', 'index.ts'), SCRIPT);
    writeFileSync(path.join(dir, 'platform-manifest.yaml'), [...head.map((line) => line.replace('name: x', `name: ${name}`).replace('organization: x', `organization: ${tenant.org}`)), 'envs:', '  staging:', `    organization: ${other.org}`, '    visibility: unlisted'].join('\n'));
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: platform.api.url };
    const unknown = await runCli(['check', '--env', 'prod'], { cwd: dir, env });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /platform-manifest\.yaml has no envs\.prod/);
    assert.match(unknown.stderr, /its environments: staging/);
    const published = await runCli(['publish', '--env', 'staging'], { cwd: dir, env: { ...env, PLATFORM_TOKEN: other.token } });
    assert.equal(published.code, 0, published.stderr);
    const read = await platform.http('GET', `/v1/integrations/${name}`, { token: other.token });
    assert.deepEqual([read.body.ownerOrg, read.body.visibility], [other.org, 'unlisted']);
    // Without --env, the base manifest: the first organization's.
    assert.equal((await runCli(['publish'], { cwd: dir, env: { ...env, PLATFORM_TOKEN: tenant.token } })).code, 1, 'the name is the other organization’s now');
    assert.ok(await install(platform, other, name));
  });
});
