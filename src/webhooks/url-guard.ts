import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/** A destination refused by the guard; never retried. */
export class BlockedDestinationError extends Error {
  readonly code = 'EBLOCKED';
}

/**
 * Only globally routable unicast addresses. IPv4-mapped IPv6 is judged as the IPv4 it
 * carries; the deprecated IPv4-compatible range ::/96 (::7f00:1, which URL parsing makes of
 * [::127.0.0.1]) is refused outright.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0)) return false;
  return parsed.range() === 'unicast';
}

/** `http(s)://host[:port]/...`, with no credentials; returns the hostname without brackets. */
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

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Connection-time check for what Node's lookup never sees: a literal IP host. Host names
 * are judged by guardedLookup as they resolve.
 */
export function assertPublicLiteral(raw: string, allowPrivate: boolean): URL {
  const url = parseWebhookUrl(raw);
  const host = bareHost(url);
  if (!allowPrivate && net.isIP(host) && !isPublicAddress(host)) throw new BlockedDestinationError(`${host} is not a public address`);
  return url;
}

/**
 * Configuration-time check: every address the host resolves to must be public. The
 * connection-time lookup below checks again, so a later DNS answer cannot bypass it.
 */
export async function assertPublicDestination(raw: string, allowPrivate: boolean): Promise<URL> {
  const url = assertPublicLiteral(raw, allowPrivate);
  const host = bareHost(url);
  if (allowPrivate || net.isIP(host)) return url;
  const addresses = await resolveAll(host);
  const blocked = addresses.find((address) => !isPublicAddress(address));
  if (blocked) throw new BlockedDestinationError(`resolves to ${blocked}, which is not a public address`);
  return url;
}

async function resolveAll(host: string): Promise<string[]> {
  try {
    return (await dns.promises.lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
  } catch (err) {
    throw new BlockedDestinationError(`host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request/net.connect that refuses non-public answers at connection
 * time. Literal IP hosts skip lookup in Node, so callers check those with
 * assertPublicDestination first.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const blocked = allowPrivate ? undefined : addresses.find((entry) => !isPublicAddress(entry.address));
      if (blocked) return callback(new BlockedDestinationError(`${hostname} resolved to ${blocked.address}, which is not a public address`), '');
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
      callback(null, first.address, first.family);
    });
  };
}
