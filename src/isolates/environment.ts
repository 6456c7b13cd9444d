import type { Manifest } from '../manifest/types';
import type { InstallationProjection } from '../installations/types';
import type { IntegrationEnvironment } from '../runtime/types';
import { targetKind } from '../installations/target';
import { assetUrl, publicEndpoint } from '../installations/urls';

/**
 * `context.environment` for one call (SPEC.md's environment table, for the installation's
 * target): built by the platform from the installation and its version, never taken from
 * the caller of a public endpoint.
 */
export function buildEnvironment(
  installation: InstallationProjection,
  version: { name: string; version: number; secrets: Record<string, string>; manifest?: Pick<Manifest, 'icon' | 'title' | 'description' | 'externalLinks'>; assetHashes?: Record<string, string> },
  baseUrl: string,
  token: string,
): IntegrationEnvironment {
  const iconHash = version.manifest?.icon && version.assetHashes?.[version.manifest.icon];
  const endpoint = publicEndpoint(baseUrl, installation.integration, installation.id);
  const kind = targetKind(installation.target);
  const { target } = installation;
  const status = installation.status === 'deleted' ? 'paused' : installation.status;
  const spaceSelection = kind === 'space' ? { mode: 'selected' as const, spaces: [target.space!] } : { mode: 'all' as const, spaces: [] };
  // GitBook's shapes beside SPEC.md's flat keys: one installation, one configuration, seen from each.
  const urls = { publicEndpoint: endpoint, publicContentEndpoint: endpoint };
  const atTarget = { integration: installation.integration, installation: installation.id, status, configuration: installation.configuration, externalIds: [], urls };
  return {
    apiEndpoint: baseUrl,
    apiTokens: { installation: token },
    // GitBook's integration object, as far as the manifest has it: code reads its links and title.
    integration: {
      name: version.name,
      version: version.version,
      ...(version.manifest && { title: version.manifest.title, description: version.manifest.description }),
      externalLinks: version.manifest?.externalLinks ?? [],
      scopes: installation.scopes,
      urls: { ...urls, ...(iconHash && { icon: assetUrl(baseUrl, iconHash) }) },
    },
    secrets: version.secrets,
    id: installation.id,
    target: kind === 'organization' ? `organization:${target.org}` : kind === 'space' ? `space:${target.space}` : `site:${target.site}`,
    status: { value: status },
    configuration: installation.configuration,
    urls: { publicEndpoint: endpoint },
    externalIds: [],
    ...(kind !== 'site' && { space_selection: spaceSelection }),
    ...(target.space && { space: target.space }),
    ...(target.site && { site: target.site }),
    installation: { id: installation.id, status, configuration: installation.configuration, externalIds: [], target: { organization: target.org }, space_selection: spaceSelection, urls },
    ...(kind === 'space' && { spaceInstallation: { ...atTarget, space: target.space! } }),
    ...(kind === 'site' && { siteInstallation: { ...atTarget, site: target.site! } }),
  };
}
