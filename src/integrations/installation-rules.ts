import { checkPatch, missingRequired, OAUTH_CREDENTIALS, type Configuration, type ConfigurationSchema, type FieldIssue } from './configuration';
import { checkWebhookPatch, targetKind, webhookConfigurationComplete, WEBHOOK_INTEGRATION, type Target } from './webhook';

/** A manifest's `configurations`: `account` for organization and space installations, `site` for site ones. */
export interface ConfigurationSchemas {
  account?: ConfigurationSchema;
  site?: ConfigurationSchema;
}

const EMPTY: ConfigurationSchema = { properties: {} };

export function schemaFor(configurations: ConfigurationSchemas | undefined, target: Target): ConfigurationSchema {
  return (targetKind(target) === 'site' ? configurations?.site : configurations?.account) ?? EMPTY;
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

/** `active` once this holds (DESIGN.md §3): required filled; types and enums already hold. */
export function configurationComplete(integration: string, configurations: ConfigurationSchemas | undefined, target: Target, configuration: Configuration): boolean {
  return integration === WEBHOOK_INTEGRATION
    ? webhookConfigurationComplete(target, configuration)
    : missingRequired(schemaFor(configurations, target), configuration).length === 0;
}
