import os from 'node:os';
import ipaddr from 'ipaddr.js';

/** A destination refused by a guard; never retried. */
export class BlockedDestinationError extends Error {
  readonly code = 'EBLOCKED';
}

/** IPv4-mapped IPv6 as the IPv4 it carries; anything unparsable as undefined. */
function parse(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  return ipaddr.isValid(address) ? ipaddr.process(address) : undefined;
}

/** The deprecated IPv4-compatible range ::/96 (::7f00:1 is what URL parsing makes of [::127.0.0.1]). */
function isIpv4Compatible(parsed: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0);
}

/**
 * Only globally routable unicast addresses. IPv4-mapped IPv6 is judged as the IPv4 it
 * carries; ::/96 is refused outright.
 */
export function isPublicAddress(address: string): boolean {
  const parsed = parse(address);
  if (!parsed || isIpv4Compatible(parsed)) return false;
  return parsed.range() === 'unicast';
}

/** Interfaces change rarely; every connection asks, so their addresses are reread at most this often. */
const INTERFACES_TTL_MS = 5000;
let ownAddresses = { readAt: 0, set: new Set<string>() };

function ownInterfaceAddresses(): Set<string> {
  if (Date.now() - ownAddresses.readAt > INTERFACES_TTL_MS) {
    const set = new Set<string>();
    for (const entry of Object.values(os.networkInterfaces()).flat()) {
      const parsed = entry && parse(entry.address.split('%')[0]!);
      if (parsed) set.add(parsed.toNormalizedString());
    }
    ownAddresses = { readAt: Date.now(), set };
  }
  return ownAddresses.set;
}

/**
 * Addresses that reach this host: loopback, unspecified (0.0.0.0 connects to the host
 * itself), ::/96, and every address of its own interfaces.
 */
export function isHostAddress(address: string): boolean {
  const parsed = parse(address);
  if (!parsed) return false;
  if (isIpv4Compatible(parsed) || ['loopback', 'unspecified'].includes(parsed.range())) return true;
  return ownInterfaceAddresses().has(parsed.toNormalizedString());
}
