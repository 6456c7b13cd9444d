import type { ApiClient } from './api-client';
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
