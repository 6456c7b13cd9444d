import dns from 'node:dns';
import net from 'node:net';
import { BlockedDestinationError, isHostAddress, isPublicAddress } from './addresses';
import type { PlatformPorts } from './platform-ports';

export interface DestinationRules {
  /** Loopback, private and link-local destinations allowed (webhooks with PLATFORM_ALLOW_PRIVATE_TARGETS). */
  allowPrivate: boolean;
  /** `host:port` pairs reachable although not public (integration egress: PLATFORM_EGRESS_ALLOW). */
  allow?: readonly string[];
  platformPorts: PlatformPorts;
}

/** `[::1]` -> `::1`. */
export function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

export function portOf(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * Decides whether an outbound connection may open: public addresses, private ones where
 * the rules allow them, and never a port of the platform itself on an address of this
 * host. Checked at configuration time and again at connection time, after DNS, so a later
 * DNS answer cannot bypass it.
 */
export class DestinationGuard {
  private readonly allow: ReadonlySet<string>;

  constructor(private readonly rules: DestinationRules) {
    this.allow = new Set((rules.allow ?? []).map((entry) => entry.toLowerCase()));
  }

  /** Why a connection from `host` (as written) to `address:port` is refused, or undefined. */
  refusal(host: string, address: string, port: number): string | undefined {
    if (isHostAddress(address) && this.rules.platformPorts.has(port)) return `${host}:${port} is a port of the platform itself`;
    if (isPublicAddress(address) || this.rules.allowPrivate) return undefined;
    if (this.allow.has(`${host.toLowerCase()}:${port}`) || this.allow.has(`${address}:${port}`)) return undefined;
    return host === address ? `${address} is not a public address` : `${host} resolved to ${address}, which is not a public address`;
  }

  /** Connection-time check of a literal IP host, which Node's lookup never sees. */
  assertLiteral(url: URL): void {
    const host = bareHost(url);
    if (!net.isIP(host)) return;
    const refused = this.refusal(host, host, portOf(url));
    if (refused) throw new BlockedDestinationError(refused);
  }

  /** Configuration-time check: every address the host resolves to must pass. */
  async assertDestination(url: URL): Promise<void> {
    this.assertLiteral(url);
    const host = bareHost(url);
    if (net.isIP(host)) return;
    let addresses: string[];
    try {
      addresses = (await dns.promises.lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
    } catch (err) {
      // Where private targets are allowed, a name that does not resolve yet is no danger: the
      // connection-time lookup judges whatever it resolves to later.
      if (this.rules.allowPrivate) return;
      throw new BlockedDestinationError(`host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    for (const address of addresses) {
      const refused = this.refusal(host, address, portOf(url));
      if (refused) throw new BlockedDestinationError(refused.replace(`${host} resolved to`, 'resolves to'));
    }
  }

  /** A `lookup` for http.request/net.connect to `port` that refuses what the rules refuse. */
  lookup(port: number) {
    return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
      dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
        if (err) return callback(err, '');
        const refused = addresses.map((entry) => this.refusal(hostname, entry.address, port)).find(Boolean);
        if (refused) return callback(new BlockedDestinationError(refused), '');
        if (options.all) return callback(null, addresses);
        const [first] = addresses;
        if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        callback(null, first.address, first.family);
      });
    };
  }
}
