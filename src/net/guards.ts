import dns from 'node:dns';
import type { PlatformConfig } from '../config';
import { isHostAddress } from './addresses';
import { DestinationGuard, portOf } from './destination-guard';
import { PlatformPorts } from './platform-ports';

/** The ports this process knows from its configuration, and its own process tree. */
export function platformPortsOf(config: PlatformConfig, extraPids: (number | undefined)[] = []): PlatformPorts {
  const temporal = config.temporalAddress ? [Number(config.temporalAddress.split(':').at(-1))] : [config.devServerPort, config.devServerUiPort];
  return new PlatformPorts({ pids: [process.pid, ...extraPids], ports: [config.port, portOf(new URL(config.baseUrl)), ...temporal] });
}

/** Webhook receivers: private targets only with PLATFORM_ALLOW_PRIVATE_TARGETS; the platform's ports never. */
export const webhookGuard = (allowPrivate: boolean, platformPorts: PlatformPorts) => new DestinationGuard({ allowPrivate, platformPorts });

/** Integration code: public addresses and PLATFORM_EGRESS_ALLOW only; the platform's ports never. */
export const egressGuard = (allow: readonly string[], platformPorts: PlatformPorts) => new DestinationGuard({ allowPrivate: false, allow, platformPorts });

/**
 * Refuses, at start, a PLATFORM_EGRESS_ALLOW entry that names a port of the platform on
 * this host: the guard would refuse it at every connection anyway, so say so at once.
 */
export async function assertEgressAllowList(entries: readonly string[], platformPorts: PlatformPorts): Promise<void> {
  for (const entry of entries) {
    const separator = entry.lastIndexOf(':');
    const host = entry.slice(0, separator);
    const port = Number(entry.slice(separator + 1));
    if (!platformPorts.has(port)) continue;
    const addresses = await dns.promises.lookup(host, { all: true }).then((found) => found.map((a) => a.address), () => [host]);
    if (addresses.some(isHostAddress)) throw new Error(`PLATFORM_EGRESS_ALLOW: ${entry} is a port of the platform itself; integration code may never reach it`);
  }
}
