import { OPERATIONAL_EVENT_TYPES, WEBHOOK_EVENT_TYPES, type SelectableEventType } from '../webhooks/event-types';
import { targetKind, type Target } from './target';
import { checkPatch, missingRequired, type Configuration, type FieldIssue } from './configuration';
import type { ConfigurationSchema } from '../manifest/types';

export const WEBHOOK_INTEGRATION = 'webhook';

/** DESIGN.md §3: both configurations hold the URL and one boolean per selectable event. */
const webhookConfiguration: ConfigurationSchema = {
  properties: {
    webhook_url: { type: 'string', title: 'Webhook URL', description: 'Where events are POSTed, signed.' },
    space_content_updated: { type: 'boolean', title: 'Content updates', default: false },
    site_view: { type: 'boolean', title: 'Site views', default: false },
    page_feedback: { type: 'boolean', title: 'Page feedback', default: false },
    signature_headers: {
      type: 'string',
      title: 'Signature headers',
      description: 'platform: X-Platform-Signature alone; standard: the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) beside it.',
      enum: ['platform', 'standard'],
      default: 'platform',
    },
    installation_paused: { type: 'boolean', title: 'Installations paused', description: 'An installation of the organization was paused (by a member, or by the platform: its receiver failing or gone).', default: false },
    installation_resumed: { type: 'boolean', title: 'Installations resumed', default: false },
    auto_pause: { type: 'boolean', title: 'Pause when the receiver keeps failing', description: 'Paused by the platform once every delivery has failed for auto_pause_after_hours (and at least 20 in a row), or at once on 410 Gone; new events are then held. Before that, while the receiver has failed every attempt for 10 s, new events are held too, and go out on their own once it answers again (one is tried a minute).', default: true },
    auto_pause_after_hours: { type: 'number', title: 'Hours of failures before the pause', default: 24 },
    ordered: { type: 'boolean', title: 'Deliver in order', description: 'One delivery at a time, in the order events were recorded: the next waits until the one ahead is delivered or has failed for good.', default: false },
    max_per_second: { type: 'number', title: 'Deliveries a second, at most', description: 'Deliveries past it wait their turn (not attempts); a 429 from the receiver pauses them for its Retry-After, then halves the pace for a minute. None by default.' },
  },
  required: ['webhook_url'],
};

export const webhookConfigurations = { account: webhookConfiguration, site: webhookConfiguration };

/** Which events an installation may select depends on its target (SPEC.md); the operational ones, the whole organization's. */
export function selectableEvents(target: Target): SelectableEventType[] {
  switch (targetKind(target)) {
    case 'space':
      return ['space_content_updated'];
    case 'site':
      return ['site_view', 'page_feedback'];
    case 'organization':
      return ['space_content_updated', 'site_view', 'page_feedback', ...OPERATIONAL_EVENT_TYPES];
  }
}

const MAX_PER_SECOND_LIMIT = 10_000;

/** The wait between two sends of a throttled installation; undefined when it is not throttled. */
export function sendIntervalMs(configuration: Configuration): number | undefined {
  const rate = configuration.max_per_second;
  return typeof rate === 'number' && rate > 0 ? 1000 / rate : undefined;
}

/** Whether its deliveries go one at a time, in order (a webhook installation's line; an integration's own `ordered` property means nothing here). */
export const deliversInOrder = (installation: { integration: string; configuration: Configuration }): boolean => installation.integration === WEBHOOK_INTEGRATION && installation.configuration.ordered === true;

/**
 * Whether its new events are held while its receiver fails (a short pause of the platform's,
 * see ReceiverStates.holding): a webhook's, unless it never pauses on failures, or its line
 * already sends one delivery at a time.
 */
export const holdsWhileFailing = (installation: { integration: string; configuration: Configuration }): boolean =>
  installation.integration === WEBHOOK_INTEGRATION && !deliversInOrder(installation) && autoPauseAfterMs(installation.configuration) !== undefined;

/** Failed deliveries in a row the platform waits for, at least, before it pauses an installation. */
export const AUTO_PAUSE_MIN_FAILURES = 20;
const HOUR_MS = 60 * 60 * 1000;

/** How long every delivery must have failed before the platform pauses the installation; undefined when it never does. */
export function autoPauseAfterMs(configuration: Configuration): number | undefined {
  if (configuration.auto_pause === false) return undefined;
  const hours = configuration.auto_pause_after_hours;
  return (typeof hours === 'number' ? hours : 24) * HOUR_MS;
}

/** Whether an installation's POSTs carry the Standard Webhooks headers too. */
export const signsStandard = (configuration: Configuration): boolean => configuration.signature_headers === 'standard';

export function selectedEvents(target: Target, configuration: Configuration): SelectableEventType[] {
  return selectableEvents(target).filter((type) => configuration[type] === true);
}

/**
 * Syntax only; whether the host is public needs DNS and is checked outside workflows.
 * Control characters are refused: the URL is stored as written, and PostgreSQL refuses
 * NUL in text (the read model's write would retry for good, the installation with it).
 */
function checkUrlSyntax(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  if (!/^https?:\/\/[^/\s]+/i.test(value)) return 'must be an absolute http:// or https:// URL';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) return 'must not contain control characters';
  return undefined;
}

/** The edits a webhook installation refuses outright (400), as opposed to incomplete ones. */
export function checkWebhookPatch(target: Target, patch: Configuration): FieldIssue[] {
  const issues = checkPatch(webhookConfiguration, patch);
  const allowed = selectableEvents(target);
  for (const type of [...WEBHOOK_EVENT_TYPES, ...OPERATIONAL_EVENT_TYPES]) {
    if (patch[type] === true && !allowed.includes(type)) {
      issues.push({ field: type, message: `cannot be selected in a ${targetKind(target)} installation; selectable: ${allowed.join(', ')}` });
    }
  }
  const hours = patch.auto_pause_after_hours;
  if (typeof hours === 'number' && (hours < 0 || hours > 24 * 365)) issues.push({ field: 'auto_pause_after_hours', message: 'must be between 0 and 8760 (a year)' });
  const rate = patch.max_per_second;
  if (typeof rate === 'number' && !(rate > 0 && rate <= MAX_PER_SECOND_LIMIT)) issues.push({ field: 'max_per_second', message: `must be above 0 and at most ${MAX_PER_SECOND_LIMIT}` });
  const urlIssue = checkUrlSyntax(patch.webhook_url);
  if (urlIssue) issues.push({ field: 'webhook_url', message: urlIssue });
  return issues;
}

/** Complete: a URL and at least one selected event. Anything less keeps it pending. */
export function webhookConfigurationComplete(target: Target, configuration: Configuration): boolean {
  return missingRequired(webhookConfiguration, configuration).length === 0 && selectedEvents(target, configuration).length > 0;
}
