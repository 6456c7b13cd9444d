import { BlockedDestinationError } from '../net/addresses';
import type { DestinationGuard } from '../net/destination-guard';

/** `http(s)://host[:port]/...`, with no credentials. */
export function parseWebhookUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BlockedDestinationError('must be an absolute http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new BlockedDestinationError('must use http:// or https://');
  if (url.username || url.password) throw new BlockedDestinationError('must not carry credentials');
  return url;
}

/** Configuration time: the URL's form, then every address its host resolves to. */
export async function assertWebhookDestination(raw: string, guard: DestinationGuard): Promise<URL> {
  const url = parseWebhookUrl(raw);
  await guard.assertDestination(url);
  return url;
}
