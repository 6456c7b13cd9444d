import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from './cli';
import { TestPlatform } from './platform';
import type { ScriptedReceiver } from './receiver';

export const EXAMPLES = path.join(__dirname, '..', '..', '..', 'examples');

/**
 * Publishes one of `examples/` (or the integration folder at an absolute path) with the
 * `platform` CLI, as its author would: a copy under a unique name for this tenant's
 * organization, optionally edited. Returns the name.
 */
export async function publishExample(
  platform: TestPlatform,
  tenant: { org: string; token: string },
  example: string,
  options: { env?: NodeJS.ProcessEnv; edit?: (manifest: string, script: string) => [string, string]; files?: Record<string, string> } = {},
): Promise<string> {
  const name = `${path.basename(example)}-${Math.random().toString(36).slice(2, 8)}`.slice(0, 60);
  const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'platform-example-')), name);
  cpSync(path.resolve(EXAMPLES, example), dir, { recursive: true });
  const manifestPath = path.join(dir, 'platform-manifest.yaml');
  let manifest = readFileSync(manifestPath, 'utf8').replace(/^name: .*$/m, `name: ${name}`).replace(/^organization: .*$/m, `organization: ${tenant.org}`);
  const scriptPath = path.join(dir, /^script: (.+)$/m.exec(manifest)?.[1] ?? 'src/index.ts');
  let script = readFileSync(scriptPath, 'utf8');
  if (options.edit) [manifest, script] = options.edit(manifest, script);
  writeFileSync(manifestPath, manifest);
  writeFileSync(scriptPath, script);
  for (const [file, contents] of Object.entries(options.files ?? {})) writeFileSync(path.join(dir, file), contents);
  const published = await runCli(['publish'], { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME, PLATFORM_API_URL: platform.api.url, PLATFORM_TOKEN: tenant.token, ...options.env } });
  assert.equal(published.code, 0, published.stderr);
  return name;
}

/** Installs an integration into the tenant's organization (or a space of it). */
export async function install(platform: TestPlatform, tenant: { org: string; token: string }, name: string, configuration: Record<string, unknown> = {}, space?: string): Promise<any> {
  const answer = await platform.http('POST', `/v1/integrations/${name}/installations`, { token: tenant.token, body: { target: { org: tenant.org, ...(space && { space }) }, configuration } });
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  return answer.body;
}

/**
 * A platform whose integration code may reach `forwarded` (a receiver on 127.0.0.1 standing
 * for a private service on its egress allow-list), a tenant, and SPEC.md's example receiver
 * published for it.
 */
export async function startWithForwarding(testFile: string, forwarded: ScriptedReceiver): Promise<{ platform: TestPlatform; tenant: { org: string; token: string }; receiver: string }> {
  await forwarded.start();
  const platform = await new TestPlatform(testFile, { egressAllow: [`127.0.0.1:${new URL(forwarded.url).port}`] }).start();
  const tenant = await platform.tenant();
  return { platform, tenant, receiver: await publishExample(platform, tenant, 'webhook-receiver') };
}
