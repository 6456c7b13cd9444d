import type { ApiClient } from './api-client';
import { CliError } from './api-client';
import { deliveryColumns, deliveryDetail, show, table, type DeliveryRow, type Output } from './format';

export async function listDeliveries(api: ApiClient, output: Output, filter: Record<string, string | undefined>): Promise<void> {
  const query = new URLSearchParams(Object.entries(filter).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const page = await api.request<{ items: DeliveryRow[]; nextPageToken?: string }>('GET', `/v1/deliveries?${query}`);
  show(output, page, () => table(page.items, deliveryColumns) + (page.nextPageToken ? `\n\nMore: --page-token ${page.nextPageToken}` : ''));
}

export async function showDelivery(api: ApiClient, output: Output, id: string): Promise<void> {
  const delivery = await api.request<DeliveryRow>('GET', `/v1/deliveries/${encodeURIComponent(id)}`);
  show(output, delivery, () => deliveryDetail(delivery));
}

export async function replayDelivery(api: ApiClient, output: Output, id: string): Promise<void> {
  const replay = await api.request<{ id: string }>('POST', `/v1/deliveries/${encodeURIComponent(id)}/replay`);
  show(output, replay, () => `Replaying as ${replay.id}\nFollow it: platform deliveries show '${replay.id}'`);
}

export async function replayFailed(api: ApiClient, output: Output, options: { installation?: string; since?: string; until?: string }): Promise<void> {
  if (!options.installation) throw new CliError('--installation is required', 'platform deliveries replay-failed --installation ins_... [--since <ISO time>]', 2);
  const result = await api.request<{ count: number; ids: string[] }>('POST', '/v1/deliveries/replay', { installation: options.installation, status: 'failed', since: options.since, until: options.until });
  show(output, result, () => (result.count === 0 ? 'No failed deliveries in that range.' : `Replaying ${result.count} failed deliveries:\n${result.ids.join('\n')}`));
}
