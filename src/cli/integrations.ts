import type { ApiClient } from './api-client';
import { CliError } from './api-client';
import { show, table, type Output } from './format';

interface IntegrationRow {
  name: string;
  latestVersion: number;
  visibility: string;
  title: string;
}

interface InstallationRow {
  id: string;
  integration: string;
  status: string;
  target: { org: string; space?: string; site?: string };
  configuration: Record<string, unknown>;
}

export async function listIntegrations(api: ApiClient, output: Output): Promise<void> {
  const { items } = await api.request<{ items: IntegrationRow[] }>('GET', '/v1/integrations');
  show(output, { items }, () =>
    table(items, [
      { header: 'NAME', value: (i) => i.name },
      { header: 'VERSION', value: (i) => String(i.latestVersion) },
      { header: 'VISIBILITY', value: (i) => i.visibility },
      { header: 'TITLE', value: (i) => i.title },
    ]),
  );
}

const nextStep = (installation: InstallationRow) =>
  installation.status === 'pending' ? `\nIt stays pending until its configuration is complete: platform config set ${installation.id} key=value …` : '';

export async function install(api: ApiClient, output: Output, name: string | undefined, target: { org?: string; space?: string; site?: string }, installLink?: string): Promise<void> {
  if (!name) throw new CliError('missing <integration name>', 'platform install <name> --org <org> [--space <id> | --site <id>]', 2);
  if (!target.org) throw new CliError('--org is required', 'platform install <name> --org <org> [--space <id> | --site <id>]', 2);
  const installation = await api.request<InstallationRow>('POST', `/v1/integrations/${encodeURIComponent(name)}/installations`, { target, installLink });
  show(output, installation, () => `Installed ${name} as ${installation.id}: ${installation.status}${nextStep(installation)}`);
}

/** `key=value`: JSON where it parses (numbers, booleans, null unsets), a string otherwise. */
export function parseAssignments(assignments: string[]): Record<string, unknown> {
  if (assignments.length === 0) throw new CliError('nothing to set', 'platform config set <installation> key=value …', 2);
  return Object.fromEntries(
    assignments.map((assignment) => {
      const eq = assignment.indexOf('=');
      if (eq <= 0) throw new CliError(`"${assignment}" is not key=value`, 'platform config set <installation> key=value …', 2);
      const raw = assignment.slice(eq + 1);
      let value: unknown = raw;
      try {
        const parsed: unknown = JSON.parse(raw);
        if (parsed === null || ['number', 'boolean'].includes(typeof parsed)) value = parsed;
      } catch {
        value = raw; // Not JSON: the plain text is the value.
      }
      return [assignment.slice(0, eq), value];
    }),
  );
}

export async function setConfiguration(api: ApiClient, output: Output, installationId: string | undefined, assignments: string[]): Promise<void> {
  if (!installationId) throw new CliError('missing <installation>', 'platform config set <installation> key=value …', 2);
  const installation = await api.request<InstallationRow>('PATCH', `/v1/installations/${encodeURIComponent(installationId)}/configuration`, parseAssignments(assignments));
  show(output, installation, () => `${installation.id}: ${installation.status}${nextStep(installation)}`);
}

/** `platform pin <installation> <version>` (kept there through publishes) and `platform unpin <installation>` (back to the latest). */
export async function moveToVersion(api: ApiClient, output: Output, installationId: string | undefined, version: string | undefined, pin: boolean): Promise<void> {
  const usage = pin ? 'platform pin <installation> <version>' : 'platform unpin <installation>';
  if (!installationId) throw new CliError('missing <installation>', usage, 2);
  if (pin && !/^[1-9]\d{0,8}$/.test(version ?? '')) throw new CliError('missing or malformed <version>: a version number', usage, 2);
  const path = `/v1/installations/${encodeURIComponent(installationId)}/${pin ? 'pin' : 'unpin'}`;
  const installation = await api.request<InstallationRow & { version?: number; pinned?: boolean }>('POST', path, pin ? { version: Number(version) } : undefined);
  show(output, installation, () => `${installation.id}: version ${installation.version}${installation.pinned ? ', pinned' : ', moved by publishes'}: ${installation.status}`);
}

