import type { Client } from '@temporalio/client';
import { inspectScript, type ScriptInspection } from '../isolates/inspect-script';
import { WEBHOOK_INTEGRATION } from '../installations/webhook';
import { ASSET_LIMITS, MAX_SCRIPT_BYTES, type Manifest } from '../manifest/types';
import { imageInfo } from '../manifest/images';
import { SOURCE_MAP_TYPE, type AssetStore } from '../delivery-log/asset-store';
import { validateManifest } from '../manifest/validate';
import { publishes } from '../metrics';
import type { DirectoryIndex } from '../delivery-log/directory-index';
import { commitVersionUpdate, integrationQuery, integrationVersionWorkflowId, integrationWorkflowId, reserveVersionUpdate } from '../contracts/integration';
import { integrationVersionWorkflow, integrationWorkflow } from '../workflows/integration';
import { requireMember, type Caller } from './auth';
import { ApiError, badRequest, conflict, notFound } from './errors';
import { newInstallLinkToken } from './integration-catalog';
import { rolloutWorkflow, rolloutWorkflowId } from '../workflows/rollout';
import { changeOf } from '../integrations/versions';


/** A source map as esbuild writes one (version 3, mappings); anything else is not kept. */
function isSourceMap(text: string): boolean {
  try {
    const map = JSON.parse(text) as { version?: unknown; mappings?: unknown };
    return map.version === 3 && typeof map.mappings === 'string';
  } catch {
    return false;
  }
}

export interface PublishBody {
  manifest: string;
  script: string;
  assets?: Record<string, string>;
  secrets?: Record<string, string>;
  /** A development version (`platform dev`): run only by the installations its owners pin to it; never the latest. */
  dev?: boolean;
  /** The bundle's source map: kept in the asset store, read by the log to name source lines. */
  sourceMap?: string;
}

/**
 * Publishing a version: every problem of the manifest and the script at once, then reserve,
 * store, commit (a crash in between leaves a gap in the numbering, never a half version).
 */
export class PublishService {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly directory: DirectoryIndex,
    private readonly assets: AssetStore,
  ) {}

  async publish(caller: Caller, body: PublishBody): Promise<{ name: string; version: number; dev?: true }> {
    const timer = publishes.startTimer();
    try {
      const published = await this.run(caller, body);
      timer({ outcome: 'published' });
      return published;
    } catch (err) {
      timer({ outcome: 'refused' });
      throw err;
    }
  }

  private async run(caller: Caller, body: PublishBody): Promise<{ name: string; version: number; dev?: true }> {
    if (Buffer.byteLength(body.script) > MAX_SCRIPT_BYTES) {
      throw new ApiError(413, 'payload_too_large', `the script bundle is ${Buffer.byteLength(body.script)} bytes; the limit is ${MAX_SCRIPT_BYTES} (1 MiB)`, [{ field: 'script', message: 'exceeds 1 MiB' }]);
    }
    // A Map: asset names like "constructor" must not find what every object inherits.
    const assets = new Map(Object.entries(body.assets ?? {}).map(([file, base64]) => [file, Buffer.from(base64, 'base64')]));
    const total = [...assets.values()].reduce((sum, bytes) => sum + bytes.length, 0);
    if (total > ASSET_LIMITS.totalBytes) throw badRequest(`assets are ${Math.ceil(total / 1024)} KiB in all; at most ${ASSET_LIMITS.totalBytes / 1024 / 1024} MiB`, [{ field: 'assets', message: `exceed ${ASSET_LIMITS.totalBytes / 1024 / 1024} MiB in all` }]);
    // SPEC.md makes the script optional; without one, no component exists.
    const inspection: ScriptInspection = body.script ? await inspectScript(body.script) : { ok: true, componentIds: [], eventTypes: [] };
    const { manifest, errors } = validateManifest(body.manifest, { readFile: (file) => assets.get(file), componentIds: inspection.ok ? inspection.componentIds : undefined });
    // Every problem at once: the manifest's, each with its line, and the script's.
    const details = [...errors.map(({ path, ...rest }) => ({ field: path, ...rest })), ...(inspection.ok ? [] : [{ field: 'script', message: inspection.error }])];
    if (!manifest || !inspection.ok || details.length) throw badRequest(`the integration has ${details.length} error(s): ${details.map((d) => ('line' in d ? `${d.line}:${d.column} ${d.field} ${d.message}` : `${d.field}: ${d.message}`)).join('; ')}`, details);

    const org = await this.directory.organization(manifest.organization);
    if (!org) throw notFound('organization');
    requireMember(caller, org.id, 'organization');
    const secrets = body.secrets ?? {};
    const listed = new Set(Object.keys(manifest.secrets ?? {}));
    const missing = [...listed].filter((name) => !Object.prototype.hasOwnProperty.call(secrets, name));
    const extra = Object.keys(secrets).filter((name) => !listed.has(name));
    if (missing.length || extra.length) {
      throw badRequest('secrets must match the manifest', [...missing.map((name) => ({ field: `secrets.${name}`, message: 'is listed in the manifest but has no value' })), ...extra.map((name) => ({ field: `secrets.${name}`, message: 'is not listed in the manifest' }))]);
    }
    if (manifest.name === WEBHOOK_INTEGRATION) throw conflict(`the name "${WEBHOOK_INTEGRATION}" is not available`);

    const handle = await this.client.workflow.start(integrationWorkflow, {
      workflowId: integrationWorkflowId(manifest.name),
      taskQueue: this.taskQueue,
      args: [{ name: manifest.name, ownerOrg: org.id, installLinkToken: newInstallLinkToken() }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    if (body.dev && !(await handle.query(integrationQuery)).summary) throw conflict(`publish a first version of ${manifest.name} before running a development version of it`);
    const version = await handle.executeUpdate(reserveVersionUpdate, { args: [org.id] });
    const assetHashes = await this.keepAssets(manifest, assets);
    const [sourceMapHash] = body.sourceMap && isSourceMap(body.sourceMap) ? await this.assets.put([{ contentType: SOURCE_MAP_TYPE, bytes: Buffer.from(body.sourceMap) }]) : [];
    await this.client.workflow.start(integrationVersionWorkflow, {
      workflowId: integrationVersionWorkflowId(manifest.name, version),
      taskQueue: this.taskQueue,
      args: [{ name: manifest.name, version, manifest, script: body.script, eventTypes: inspection.eventTypes, assets: {}, assetHashes, ...(sourceMapHash && { sourceMapHash }), secrets, publishedAt: new Date().toISOString(), publishedBy: caller.kind === 'member' ? caller.userId : 'admin', ...(body.dev && { dev: true }) }],
    });
    // A development version is stored, not committed: it is no one's latest, and nothing rolls out.
    if (body.dev) return { name: manifest.name, version, dev: true };
    const images = { ...(manifest.icon && { icon: assetHashes[manifest.icon] }), ...(manifest.previewImages && { previewImages: manifest.previewImages.map((file) => assetHashes[file]!) }) };
    const committed = await handle.executeUpdate(commitVersionUpdate, { args: [version, manifest, org.id, inspection.eventTypes, images] });
    // Installations move to it as GitBook's do, but the pinned ones; the rollout is durable, not waited for.
    if (version > 1) {
      const change = changeOf({ version, manifest, eventTypes: inspection.eventTypes });
      await this.client.workflow.start(rolloutWorkflow, { workflowId: rolloutWorkflowId(manifest.name, version), taskQueue: this.taskQueue, args: [{ integration: manifest.name, change }], workflowIdConflictPolicy: 'USE_EXISTING' });
    }
    return committed;
  }

  /** The images the manifest names (validated: PNG or JPEG, within their limits), kept by hash; others sent along are not kept. */
  private async keepAssets(manifest: Manifest, assets: Map<string, Buffer>): Promise<Record<string, string>> {
    const named = [...new Set([manifest.icon, ...(manifest.previewImages ?? []), ...(manifest.blocks ?? []).map((block) => block.icon)].filter((file): file is string => typeof file === 'string'))];
    const kept = named.map((file) => ({ file, bytes: assets.get(file)! }));
    const hashes = await this.assets.put(kept.map(({ bytes }) => ({ contentType: imageInfo(bytes)?.format === 'jpeg' ? 'image/jpeg' : 'image/png', bytes })));
    return Object.fromEntries(kept.map(({ file }, i) => [file, hashes[i]!]));
  }
}
