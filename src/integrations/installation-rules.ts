import { checkPatch, missingRequired, type Configuration, type ConfigurationSchema, type FieldIssue } from './configuration';
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

/** Edits refused outright: the built-in webhook integration adds its target rules. */
export function checkInstallationPatch(integration: string, configurations: ConfigurationSchemas | undefined, target: Target, patch: Configuration): FieldIssue[] {
  return integration === WEBHOOK_INTEGRATION ? checkWebhookPatch(target, patch) : checkPatch(schemaFor(configurations, target), patch);
}

/** `active` once this holds (DESIGN.md §3): required filled; types and enums already hold. */
export function configurationComplete(integration: string, configurations: ConfigurationSchemas | undefined, target: Target, configuration: Configuration): boolean {
  return integration === WEBHOOK_INTEGRATION
    ? webhookConfigurationComplete(target, configuration)
    : missingRequired(schemaFor(configurations, target), configuration).length === 0;
}
