import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { integrationVersionWorkflowId, versionQuery } from '../src/contracts/integration';
import { parseAssignments } from '../src/cli/integrations';
import { substituteSecrets } from '../src/cli/authoring';
import { bundleScript } from '../src/cli/bundle';
import { temporal } from '@temporalio/proto';
import { TestPlatform } from './support/platform';
import { runCli } from './support/cli';

describe('the authoring CLI, end to end', function () {
  const platform = new TestPlatform(__filename);
  const work = mkdtempSync(path.join(os.tmpdir(), 'platform-cli-'));
  const name = `e2e-${Date.now().toString(36)}`;
  const dir = path.join(work, name);
  let tenant: { org: string; token: string };
  let env: NodeJS.ProcessEnv;

  const cli = (args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) => runCli(args, { cwd: options.cwd ?? dir, env: options.env ?? env });

  before(async function () {
    await platform.start();
    tenant = await platform.tenant();
    env = { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: tenant.token, E2E_CLIENT_SECRET: 'shh-123', UNLISTED_VAR: 'never read' };
  });
  after(() => platform.stop());

  it('new -> check -> publish -> install -> configure -> active', async function () {
    const created = await cli(['new', name, '--organization', tenant.org], { cwd: work });
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, new RegExp(`Created ${name}/ with platform-manifest.yaml, src/index.ts, package.json, tsconfig.json`));
    assert.match(readFileSync(path.join(dir, 'platform-manifest.yaml'), 'utf8'), /^visibility: private$/m);

    const checked = await cli(['check']);
    assert.equal(checked.code, 0, checked.stderr);
    assert.equal(checked.stdout, `${name} is valid (components: counter)\n`);

    // The author adds a required property and a secret.
    const manifestPath = path.join(dir, 'platform-manifest.yaml');
    writeFileSync(
      manifestPath,
      readFileSync(manifestPath, 'utf8').replace('      greeting:', '      api_key: { type: string, title: API key }\n      greeting:') + '    required: [api_key]\nsecrets:\n  CLIENT_SECRET: ${{ env.E2E_CLIENT_SECRET }}\n',
    );
    const published = await cli(['publish']);
    assert.equal(published.code, 0, published.stderr);
    assert.match(published.stdout, new RegExp(`^Published ${name} version 1\\nInstall it: platform install ${name} --org ${tenant.org}\\n$`));
    assert.match(published.stderr, /Checking…[\s\S]*Bundling src\/index.ts…[\s\S]*Uploading/);

    const stored = await platform.client.workflow.getHandle(integrationVersionWorkflowId(name, 1)).query(versionQuery);
    assert.deepEqual(stored.secrets, { CLIENT_SECRET: 'shh-123' }, 'substituted from the CLI environment, only the listed variable');
    assert.match(stored.script, /counter/);
    const raw = await platform.client.workflowService.getWorkflowExecutionHistory({ namespace: platform.namespace, execution: { workflowId: integrationVersionWorkflowId(name, 1) } });
    assert.equal(Buffer.from(temporal.api.history.v1.History.encode(raw.history!).finish()).includes('shh-123'), false, 'the secret stands encrypted in history');

    const listed = await cli(['integrations', 'list']);
    assert.match(listed.stdout, new RegExp(`^${name} +1 +private +${name.split('-').map((w) => w[0]!.toUpperCase() + w.slice(1)).join(' ')}$`, 'm'));

    const installed = await cli(['install', name, '--org', tenant.org, '--json']);
    assert.equal(installed.code, 0, installed.stderr);
    const installation = JSON.parse(installed.stdout);
    assert.equal(installation.status, 'pending');

    const configured = await cli(['config', 'set', installation.id, 'api_key=abc123', 'greeting=Hi']);
    assert.equal(configured.code, 0, configured.stderr);
    assert.equal(configured.stdout, `${installation.id}: active\n`);
    const read = await platform.http('GET', `/v1/installations/${installation.id}`, { token: tenant.token });
    assert.deepEqual(read.body.configuration, { api_key: 'abc123', greeting: 'Hi' });
  });

  it('publish fails naming a secret whose environment variable is missing', async function () {
    const { E2E_CLIENT_SECRET: _unset, ...withoutSecret } = env;
    const answer = await cli(['publish'], { env: withoutSecret });
    assert.equal(answer.code, 1);
    assert.match(answer.stderr, /secret CLIENT_SECRET needs the environment variable E2E_CLIENT_SECRET, which is not set/);
  });

  it('publish refuses a listed variable set to the empty string, as CI systems pass an undefined secret', async function () {
    const answer = await cli(['publish'], { env: { ...env, E2E_CLIENT_SECRET: '' } });
    assert.equal(answer.code, 1);
    assert.match(answer.stderr, /secret CLIENT_SECRET needs the environment variable E2E_CLIENT_SECRET, which is empty/);
  });

  it('check prints file:line:col for each error and exits non-zero', async function () {
    const broken = path.join(work, 'broken');
    await cli(['new', 'broken', '--organization', tenant.org], { cwd: work });
    const manifestPath = path.join(broken, 'platform-manifest.yaml');
    writeFileSync(manifestPath, readFileSync(manifestPath, 'utf8').replace('visibility: private', 'visibilty: private'));
    const answer = await cli(['check', broken]);
    assert.equal(answer.code, 1);
    assert.match(answer.stderr, /platform-manifest\.yaml:1:1 visibility: is required/);
    assert.match(answer.stderr, /platform-manifest\.yaml:5:1 visibilty: unknown key "visibilty"; did you mean "visibility"\?/);
    assert.match(answer.stderr, /2 error\(s\)/);
  });

  it('bundles as GitBook’s CLI does: a package’s browser build over its Node one, `.raw.js` files as text, JSX with this runtime', async function () {
    const root = mkdtempSync(path.join(os.tmpdir(), 'platform-bundle-'));
    const pkg = path.join(root, 'node_modules', 'two-builds');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'two-builds', main: 'node.js', browser: 'browser.js' }));
    writeFileSync(path.join(pkg, 'node.js'), "import http from 'http'; export const build = 'node ' + typeof http;");
    writeFileSync(path.join(pkg, 'browser.js'), "export const build = 'browser';");
    writeFileSync(path.join(root, 'widget.raw.js'), 'window.widget = 1;');
    writeFileSync(path.join(root, 'index.tsx'), "import { build } from 'two-builds';\nimport widget from './widget.raw.js';\nexport const parts = [build, widget, <text>hi</text>];\n");
    const bundle = await bundleScript(path.join(root, 'index.tsx'));
    const { parts } = await import(`data:text/javascript;base64,${Buffer.from(bundle).toString('base64')}`);
    assert.deepEqual(parts, ['browser', 'window.widget = 1;', { type: 'text', children: ['hi'] }]);
  });

  it('bundles `@gitbook/api` as the integration’s own copy when it has one, else a stand-in with GitBook’s enums (the monorepo gave it with the runtime)', async function () {
    const root = mkdtempSync(path.join(os.tmpdir(), 'platform-gitbook-api-'));
    writeFileSync(path.join(root, 'index.ts'), "import { ContentKitIcon, GitBookAPI } from '@gitbook/api';\nlet client = 'made';\ntry { new GitBookAPI(); } catch (error) { client = (error as Error).message; }\nexport const icons = [ContentKitIcon.LinkExternal, ContentKitIcon.Github, ContentKitIcon.CheckCircle, client];\n");
    const standIn = await import(`data:text/javascript;base64,${Buffer.from(await bundleScript(path.join(root, 'index.ts'))).toString('base64')}`);
    assert.deepEqual(standIn.icons.slice(0, 3), ['link-external', 'github', 'check-circle']);
    assert.match(standIn.icons[3], /^GitBookAPI: GitBook's API client is not this platform's/);
    const own = path.join(root, 'node_modules', '@gitbook', 'api');
    mkdirSync(own, { recursive: true });
    writeFileSync(path.join(own, 'package.json'), JSON.stringify({ name: '@gitbook/api', main: 'index.js' }));
    writeFileSync(path.join(own, 'index.js'), "export const ContentKitIcon = { LinkExternal: 'own', Github: 'own', CheckCircle: 'own' };\nexport class GitBookAPI {}\n");
    const owned = await import(`data:text/javascript;base64,${Buffer.from(await bundleScript(path.join(root, 'index.ts'))).toString('base64')}`);
    assert.deepEqual(owned.icons, ['own', 'own', 'own', 'made']);
  });

  it('check renders each component once, as a block is when first inserted: a render that throws is an error at its line in the source, classic JSX without React among them', async function () {
    const root = path.join(mkdtempSync(path.join(os.tmpdir(), 'platform-render-')), 'renders');
    mkdirSync(path.join(root, 'src'), { recursive: true });
    writeFileSync(
      path.join(root, 'platform-manifest.yaml'),
      `name: renders\ntitle: Renders\ndescription: Three blocks.\norganization: ${tenant.org}\nvisibility: private\nscopes: [space:content:read]\nscript: src/index.tsx\nblocks:\n  - { id: fine, title: Fine }\n  - { id: broken, title: Broken }\n  - { id: unfurled, title: Unfurled }\nconfigurations:\n  account:\n    properties:\n      greeting: { type: string, default: Hello }\n`,
    );
    const script = [
      "import { createComponent, createIntegration, ExposableError } from 'integration-platform/runtime';",
      '',
      'const fine = createComponent<{ url?: string }, {}, never, any>({',
      "  componentId: 'fine',",
      '  async render(element, context) {',
      "    return <text>{context.environment.installation.configuration.greeting}, {element.props.url ?? 'no link'}</text>;",
      '  },',
      '});',
      'const broken = createComponent<{ url: string }>({',
      "  componentId: 'broken',",
      '  async render(element) {',
      '    const host = new URL(element.props.url).hostname;',
      '    return <text>{host}</text>;',
      '  },',
      '});',
      'const unfurled = createComponent<{ url?: string }>({',
      "  componentId: 'unfurled',",
      '  async render(element) {',
      "    if (!element.props.url) throw new ExposableError('Missing URL');",
      '    return <text>{element.props.url}</text>;',
      '  },',
      '});',
      'export default createIntegration({ components: [fine, broken, unfurled] });',
      '',
    ].join('\n');
    writeFileSync(path.join(root, 'src', 'index.tsx'), script);
    const checked = await cli(['check'], { cwd: root });
    assert.equal(checked.code, 1, checked.stdout);
    assert.match(checked.stderr, /^(error: )?src\/index\.tsx:12:\d+ component "broken" fails when rendered with no props, as a block is when first inserted: TypeError: /m);
    assert.ok(!checked.stderr.includes('"fine"'), checked.stderr);
    // Classic JSX (a tsconfig that asks for React's) renders nothing: said at check, not at the first render.
    writeFileSync(path.join(root, 'tsconfig.json'), JSON.stringify({ compilerOptions: { jsx: 'react' } }));
    writeFileSync(path.join(root, 'src', 'index.tsx'), script.replace('new URL(element.props.url).hostname', "'fixed'"));
    const classic = await cli(['check'], { cwd: root });
    assert.equal(classic.code, 1);
    assert.match(classic.stderr, /^(error: )?src\/index\.tsx:6:\d+ component "fine" fails when rendered .*: ReferenceError: React is not defined$/m);
    writeFileSync(path.join(root, 'tsconfig.json'), JSON.stringify({ compilerOptions: { jsx: 'react-jsx' } }));
    const fixed = await cli(['check'], { cwd: root });
    assert.equal(fixed.code, 0, fixed.stderr);
    assert.equal(fixed.stdout, 'renders is valid (components: fine, broken, unfurled)\n');
    // A refusal on purpose (ExposableError) is the block saying it needs its props, as link unfurl gives them: a note.
    assert.match(fixed.stderr, /note: component "unfurled" refuses to render with no props \(Missing URL\)/);
  });

  it('parses key=value as JSON where it parses and as text otherwise; reads only listed variables', function () {
    assert.deepEqual(parseAssignments(['a=1', 'b=true', 'c=null', 'd=hello', 'e={"x":1}', 'f=']), { a: 1, b: true, c: null, d: 'hello', e: '{"x":1}', f: '' });
    const manifest = { secrets: { A: '${{ env.VAR_A }}' } } as never;
    assert.deepEqual(substituteSecrets(manifest, { VAR_A: 'x', VAR_B: 'y' }), { A: 'x' });
  });
});
