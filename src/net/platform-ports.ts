import { listeningPorts, processTrees } from '../system/procfs';

/**
 * A rescan for a port not seen yet happens at most this often: a scan reads all of /proc,
 * every socket of the host and every descriptor of the platform's processes (beside 100
 * receivers that hang, 4,000 sockets: one scan a second was 5% of the process's time).
 * Platform processes listen on new ports when they start, and each start is watched
 * (`watchProcess`), which makes the next check scan at once.
 */
const RESCAN_MS = 10_000;

/**
 * Every TCP port a platform process listens on: ports named up front (the API's, the
 * Temporal server's) and, found at run time from /proc, each port that a watched process
 * or any of its descendants listens on (the dev server opens random loopback ports, one of
 * them an unauthenticated HTTP API; each workerd process has its own). Guards refuse them
 * on every address of this host, whatever else they allow.
 */
export class PlatformPorts {
  private readonly roots = new Set<number>();
  private readonly named = new Set<number>();
  private found = new Set<number>();
  private scannedAt = 0;

  constructor(options: { pids?: (number | undefined)[]; ports?: (number | undefined)[] } = {}) {
    for (const pid of options.pids ?? []) if (pid) this.roots.add(pid);
    for (const port of options.ports ?? []) if (port) this.named.add(port);
  }

  watchProcess(pid: number): void {
    this.roots.add(pid);
    this.scannedAt = 0;
  }

  unwatchProcess(pid: number): void {
    this.roots.delete(pid);
  }

  add(port: number): void {
    this.named.add(port);
  }

  has(port: number): boolean {
    if (this.named.has(port)) return true;
    if (!this.found.has(port) && Date.now() - this.scannedAt >= RESCAN_MS) this.scan();
    return this.found.has(port);
  }

  /** Every port known now, after a fresh scan. */
  list(): number[] {
    this.scan();
    return [...new Set([...this.named, ...this.found])].sort((a, b) => a - b);
  }

  private scan(): void {
    this.found = listeningPorts(processTrees(this.roots));
    this.scannedAt = Date.now();
  }
}
