import { checkPatch, missingRequired, OAUTH_CREDENTIALS, type Configuration, type FieldIssue } from './configuration';
import { checkWebhookPatch, webhookConfigurationComplete, WEBHOOK_INTEGRATION } from './webhook';
import { targetKind, type Target, type TargetKind } from './target';
import type { ConfigurationSchema, IntegrationTarget } from '../manifest/types';

/**
 * A manifest's `configurations`: `account` for organization and space installations, `site`
 * for site ones; a space installation also takes `space`'s (GitBook's), when there is one.
 */
export interface ConfigurationSchemas {
  account?: ConfigurationSchema;
  space?: ConfigurationSchema;
  site?: ConfigurationSchema;
}

const EMPTY: ConfigurationSchema = { properties: {} };

/**
 * GitBook keeps an organization's configuration and each space's apart; here a space
 * installation is one installation with one configuration, so it holds both: the
 * properties and required ones of each, and any keys if either is rendered by a component.
 */
function both(account: ConfigurationSchema, space: ConfigurationSchema): ConfigurationSchema {
  const componentId = space.componentId ?? account.componentId;
  return { properties: { ...account.properties, ...space.properties }, required: [...new Set([...(account.required ?? []), ...(space.required ?? [])])], ...(componentId && { componentId }) };
}

export function schemaFor(configurations: ConfigurationSchemas | undefined, target: Target): ConfigurationSchema {
  const kind = targetKind(target);
  if (kind === 'site') return configurations?.site ?? EMPTY;
  const account = configurations?.account ?? EMPTY;
  return kind === 'space' && configurations?.space ? both(account, configurations.space) : account;
}

/**
 * Edits refused outright: the built-in webhook integration adds its target rules; other
 * integrations also take `oauth_credentials`, an object their OAuth flow stores.
 */
export function checkInstallationPatch(integration: string, configurations: ConfigurationSchemas | undefined, target: Target, patch: Configuration): FieldIssue[] {
  if (integration === WEBHOOK_INTEGRATION) return checkWebhookPatch(target, patch);
  const { [OAUTH_CREDENTIALS]: credentials, ...rest } = patch;
  const issues = checkPatch(schemaFor(configurations, target), rest);
  if (credentials !== undefined && credentials !== null && (typeof credentials !== 'object' || Array.isArray(credentials))) issues.push({ field: OAUTH_CREDENTIALS, message: 'must be an object' });
  return issues;
}

/** Installation targets each manifest `target` takes: a space or site integration also installs on a whole organization, as in GitBook. */
const TARGETS_OF: Record<IntegrationTarget, TargetKind[]> = { organization: ['organization'], space: ['organization', 'space'], site: ['organization', 'site'], all: ['organization', 'space', 'site'] };

/** Why the integration does not install on this target, if it does not (its manifest's `target`). */
export function refusedTarget(integrationTarget: IntegrationTarget | undefined, target: Target): string | undefined {
  const allowed = TARGETS_OF[integrationTarget ?? 'all'];
  return allowed.includes(targetKind(target)) ? undefined : `installs on ${allowed.map((kind) => (kind === 'organization' ? 'an organization' : `a ${kind}`)).join(' or ')} (its manifest's target: ${integrationTarget}), not on a ${targetKind(target)}`;
}

/** `active` once this holds (DESIGN.md §3): required filled; types and enums already hold. */
export function configurationComplete(integration: string, configurations: ConfigurationSchemas | undefined, target: Target, configuration: Configuration): boolean {
  return integration === WEBHOOK_INTEGRATION
    ? webhookConfigurationComplete(target, configuration)
    : missingRequired(schemaFor(configurations, target), configuration).length === 0;
}
