import { inspectScript, type ScriptInspection } from '../../isolates/inspect-script';
import { validateManifest } from '../../manifest/validate';
import { MAX_SCRIPT_BYTES } from '../../manifest/types';
import { WEBHOOK_INTEGRATION } from '../../integrations/webhook';
import { DIRECTORY_WORKFLOW_ID, orgQuery } from '../../workflows/directory';
import { commitVersionUpdate, integrationVersionWorkflow, integrationVersionWorkflowId, integrationWorkflow, integrationWorkflowId, reserveVersionUpdate } from '../../workflows/integration';
import { requireMember } from '../auth';
import type { ApiDeps } from '../deps';
import { ApiError, badRequest, conflict, notFound } from '../errors';
import { IntegrationCatalog, newInstallLinkToken } from '../integration-catalog';
import type { RouteTable } from '../route-table';
import { listOf } from '../schemas';

const MAX_ASSETS_BYTES = 512 * 1024;

interface PublishBody {
  manifest: string;
  script: string;
  assets?: Record<string, string>;
  secrets?: Record<string, string>;
}

const publishSchema = {
  type: 'object',
  required: ['manifest', 'script'],
  additionalProperties: false,
  properties: {
    manifest: { type: 'string', minLength: 1, maxLength: 65536, description: 'platform-manifest.yaml as text, secrets still as ${{ env.NAME }}' },
    script: { type: 'string', description: 'The script bundled as one ES module, at most 1 MiB' },
    assets: { type: 'object', additionalProperties: { type: 'string' }, description: 'Path next to the manifest -> base64' },
    secrets: { type: 'object', additionalProperties: { type: 'string' }, description: 'Secret name -> value, substituted by the CLI' },
  },
};

const summarySchema = { type: 'object', required: ['name', 'visibility', 'latestVersion', 'title'], properties: { name: { type: 'string' }, visibility: { type: 'string' }, latestVersion: { type: 'integer' }, title: { type: 'string' } } };

export function integrationRoutes(routes: RouteTable, deps: ApiDeps): void {
  const catalog = new IntegrationCatalog(deps.client);

  routes.add<PublishBody>(
    {
      method: 'post',
      path: '/v1/integrations',
      summary: 'Publish a new immutable version of an integration',
      access: 'member',
      body: publishSchema,
      bodyLimit: '3mb',
      responses: { 201: { description: '{name, version}' }, 400: { description: 'One detail per broken rule, with manifest path, line and column' }, 409: { description: 'The name belongs to another organization' } },
    },
    async ({ caller, body }) => {
      if (Buffer.byteLength(body.script) > MAX_SCRIPT_BYTES) {
        throw new ApiError(413, 'payload_too_large', `the script bundle is ${Buffer.byteLength(body.script)} bytes; the limit is ${MAX_SCRIPT_BYTES} (1 MiB)`, [{ field: 'script', message: 'exceeds 1 MiB' }]);
      }
      // A Map: asset names like "constructor" must not find what every object inherits.
      const assets = new Map(Object.entries(body.assets ?? {}).map(([file, base64]) => [file, Buffer.from(base64, 'base64')]));
      if ([...assets.values()].reduce((sum, bytes) => sum + bytes.length, 0) > MAX_ASSETS_BYTES) throw badRequest('assets exceed 512 KiB in all', [{ field: 'assets', message: 'exceed 512 KiB' }]);
      // SPEC.md makes the script optional; without one, no component exists.
      const inspection: ScriptInspection = body.script ? await inspectScript(body.script) : { ok: true, componentIds: [], eventTypes: [] };
      const { manifest, errors } = validateManifest(body.manifest, { readFile: (file) => assets.get(file), componentIds: inspection.ok ? inspection.componentIds : undefined });
      // Every problem at once: the manifest's, each with its line, and the script's.
      const details = [...errors.map(({ path, ...rest }) => ({ field: path, ...rest })), ...(inspection.ok ? [] : [{ field: 'script', message: inspection.error }])];
      if (!manifest || details.length) throw badRequest(`the integration has ${details.length} error(s): ${details.map((d) => ('line' in d ? `${d.line}:${d.column} ${d.field} ${d.message}` : `${d.field}: ${d.message}`)).join('; ')}`, details);

      const org = await deps.client.workflow.getHandle(DIRECTORY_WORKFLOW_ID).query(orgQuery, manifest.organization);
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

      const handle = await deps.client.workflow.start(integrationWorkflow, {
        workflowId: integrationWorkflowId(manifest.name),
        taskQueue: deps.taskQueue,
        args: [{ name: manifest.name, ownerOrg: org.id, installLinkToken: newInstallLinkToken() }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      // Reserve a number, store the version in a workflow of its own, then make it the latest.
      const version = await handle.executeUpdate(reserveVersionUpdate, { args: [org.id] });
      await deps.client.workflow.start(integrationVersionWorkflow, {
        workflowId: integrationVersionWorkflowId(manifest.name, version),
        taskQueue: deps.taskQueue,
        args: [{ name: manifest.name, version, manifest, script: body.script, eventTypes: inspection.ok ? inspection.eventTypes : [], assets: body.assets ?? {}, secrets, publishedAt: new Date().toISOString(), publishedBy: caller.kind === 'member' ? caller.userId : 'admin' }],
      });
      const published = await handle.executeUpdate(commitVersionUpdate, { args: [version, manifest, org.id, inspection.ok ? inspection.eventTypes : []] });
      return { status: 201, body: published };
    },
  );

  routes.add(
    { method: 'get', path: '/v1/integrations', summary: 'Integrations the caller may see: public ones and its organizations’ own', access: 'member', responses: { 200: { description: 'Integrations', schema: listOf(summarySchema) } } },
    async ({ caller }) => ({ status: 200, body: { items: await catalog.list(caller) } }),
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/integrations/:name',
      summary: 'One integration (an unlisted one with ?installLink=<token>)',
      access: 'member',
      query: { installLink: 'Install link token of an unlisted integration' },
      responses: { 200: { description: 'The integration', schema: summarySchema }, 404: { description: 'Not found or not visible' } },
    },
    async ({ caller, params, query }) => ({ status: 200, body: (await catalog.readable(caller, params.name!, query.installLink)).summary }),
  );

  routes.add(
    {
      method: 'get',
      path: '/v1/integrations/:name/install-link',
      summary: 'The install link of an integration, for its owners',
      access: 'member',
      responses: { 200: { description: '{token, url}' }, 404: { description: 'Not found or not an owner' } },
    },
    async ({ caller, params }) => {
      const state = await catalog.state(params.name!);
      if (!state?.summary || params.name === WEBHOOK_INTEGRATION) throw notFound('integration');
      requireMember(caller, state.ownerOrg, 'integration');
      return { status: 200, body: { token: state.installLinkToken, url: `${deps.baseUrl}/v1/integrations/${state.name}?installLink=${state.installLinkToken}` } };
    },
  );
}
