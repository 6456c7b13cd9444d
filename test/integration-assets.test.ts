import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { ASSET_LIMITS } from '../src/manifest/types';
import { integrationVersionWorkflowId, versionQuery } from '../src/contracts/integration';
import { install } from './support/examples';
import { runCli } from './support/cli';
import { png } from './support/images';
import { TestPlatform } from './support/platform';

const VERSIONED = path.join(__dirname, '..', '..', 'test', 'fixtures', 'versioned');

/** Icons and previews as large as GitBook takes them, kept out of versions' workflow payloads and served by hash. */
describe('integration images', function () {
  this.timeout(120_000);
  let platform: TestPlatform;
  let owner: { org: string; token: string };
  let dir: string;
  let name: string;
  const icon = png(256, 256, 200 * 1024);
  const preview = png(1600, 800, 900 * 1024);

  const cli = (args: string[]) => runCli(args, { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: owner.token } });
  const manifestPath = () => path.join(dir, 'platform-manifest.yaml');

  before(async function () {
    platform = await new TestPlatform(__filename).start();
    owner = await platform.tenant();
    name = `imaged-${Math.random().toString(36).slice(2, 8)}`;
    dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'platform-images-')), name);
    cpSync(VERSIONED, dir, { recursive: true });
    mkdirSync(path.join(dir, 'assets'));
    writeFileSync(path.join(dir, 'assets', 'icon.png'), icon);
    writeFileSync(path.join(dir, 'assets', 'preview.png'), preview);
    const manifest = readFileSync(manifestPath(), 'utf8').replace(/^name: .*$/m, `name: ${name}`).replace(/^organization: .*$/m, `organization: ${owner.org}`);
    writeFileSync(manifestPath(), `${manifest}icon: assets/icon.png\npreviewImages: [assets/preview.png]\n`);
  });
  after(async () => platform?.stop());

  it('publishes a 900 KiB preview (past the old 512 KiB in all), serves each image immutable at its URL, and gives the code its icon URL', async function () {
    const published = await cli(['publish']);
    assert.equal(published.code, 0, published.stderr);
    const summary = (await platform.http('GET', `/v1/integrations/${name}`, { token: owner.token })).body;
    assert.match(summary.urls.icon, new RegExp(`^${platform.api.url}/v1/assets/[0-9a-f]{64}$`));
    assert.equal(summary.urls.previewImages.length, 1);
    for (const [url, bytes] of [[summary.urls.icon, icon], [summary.urls.previewImages[0], preview]] as const) {
      const answer = await fetch(url);
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('content-type'), 'image/png');
      assert.equal(answer.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.ok(Buffer.from(await answer.arrayBuffer()).equals(bytes), 'the bytes published');
    }
    const installation = await install(platform, owner, name, { greeting: 'Hi' });
    const about = (await (await fetch(`${installation.urls.publicEndpoint}/about`)).json()) as { icon: string };
    assert.equal(about.icon, summary.urls.icon);

    // Out of the version's workflow: its history holds hashes, not 1.1 MB of images.
    const stored = await platform.client.workflow.getHandle(integrationVersionWorkflowId(name, 1)).query(versionQuery);
    assert.deepEqual(stored.assets, {});
    assert.deepEqual(Object.keys(stored.assetHashes ?? {}).sort(), ['assets/icon.png', 'assets/preview.png']);
    // The bundle's source map is kept beside them for the log, and served to no one.
    assert.match(stored.sourceMapHash ?? '', /^[0-9a-f]{64}$/);
    assert.equal((await fetch(`${platform.api.url}/v1/assets/${stored.sourceMapHash}`)).status, 404);
    const history = await platform.client.workflowService.getWorkflowExecutionHistory({ namespace: platform.namespace, execution: { workflowId: integrationVersionWorkflowId(name, 1) } });
    assert.ok(temporal.api.history.v1.History.encode(history.history!).finish().length < 200_000);
  });

  it('refuses an image past GitBook’s limits at check, naming the file and its line; an unknown or malformed hash is 404', async function () {
    writeFileSync(path.join(dir, 'assets', 'preview.png'), png(1600, 800, ASSET_LIMITS.previewBytes + 1));
    writeFileSync(path.join(dir, 'assets', 'icon.png'), png(256, 256, ASSET_LIMITS.iconBytes + 1));
    const checked = await cli(['check']);
    assert.equal(checked.code, 1);
    assert.match(checked.stderr, /platform-manifest\.yaml:\d+:\d+ icon: "assets\/icon\.png" is 257 KiB; an icon is at most 256 KiB/);
    assert.match(checked.stderr, /platform-manifest\.yaml:\d+:\d+ previewImages\[0\]: "assets\/preview\.png" is 1025 KiB; a preview is at most 1024 KiB/);
    assert.equal((await fetch(`${platform.api.url}/v1/assets/${'0'.repeat(64)}`)).status, 404);
    assert.equal((await fetch(`${platform.api.url}/v1/assets/not-a-hash`)).status, 404);
  });
});
