import type { Request as MiniflareRequest, Response as MiniflareResponse } from 'miniflare';
import { cpuSecondsOf, residentBytes } from '../net/procfs';
import { isolatesStopped } from '../metrics';
import { RUNTIME_HOST_SOURCE } from './runtime-host';
import { AnswerTooLargeError, WorkerdProcess, WorkerdStartError, type IsolateAnswer, type NodeService } from './workerd-process';

/**
 * At most one isolate per integration version and installation, each in a workerd process
 * of its own (DESIGN.md §2: isolated from the platform and from other installations).
 */
export interface IsolateKey {
  integration: string;
  version: number;
  installation: string;
}

export interface IsolatePoolOptions {
  /** The bundle of an integration version (ES module). */
  loadScript(integration: string, version: number): Promise<string>;
  outbound(request: MiniflareRequest): Promise<MiniflareResponse>;
  bindings: Record<string, NodeService>;
  /** Called with each new process, so that guards learn its ports. */
  onStarted?(process: WorkerdProcess): void;
  memoryLimitBytes?: number;
  /** A process unused this long is stopped. */
  idleMs?: number;
  /** Past this long after its last call, a process spending CPU is stopped (BACKGROUND_MS unless set). */
  backgroundMs?: number;
  /** Past this many processes, the least recently used is stopped. */
  maxProcesses?: number;
  /** Past this much resident memory in all, the least recently used are stopped. */
  memoryBudgetBytes?: number;
}

/** The isolate could not be started or did not answer; `status` is what the caller should hear. */
export class IsolateError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

interface Entry {
  starting: Promise<WorkerdProcess>;
  process?: WorkerdProcess;
  lastUsed: number;
  coldStartMs?: number;
  /** Calls waiting for it or in it: it is not stopped under them to make room for others. */
  calls: number;
  /** Its CPU time when last looked at, once past BACKGROUND_MS: what it spends after that is work left behind. */
  cpu?: { seconds: number; at: number };
}

/**
 * Past a call's 10 s and the 30 s its waitUntil work may run on, nothing the platform asked
 * for runs in an isolate: CPU it spends then is work left behind that no bound reaches (a
 * synchronous loop stops the SDK's 30 s timer; cloudflare:workers' own waitUntil skips
 * it). A probe's spinners ran until idle eviction, 5 minutes, and slowed other tenants.
 */
const BACKGROUND_MS = 40_000;
/** More than this share of a core, past BACKGROUND_MS, stops the process (an idle one spends about none). */
const BACKGROUND_CPU_SHARE = 0.1;

const MiB = 1024 * 1024;

/**
 * Warm isolates for integration code: started on first call, reused, replaced when killed
 * (deadline, memory, crash), and stopped when idle or when too many are warm. A process
 * that misbehaves takes down only its own installation's calls.
 */
export class IsolatePool {
  private readonly entries = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: IsolatePoolOptions) {
    this.sweeper = setInterval(() => void this.evict(), 10_000).unref();
  }

  /** A call into the key's isolate, bounded by `deadlineMs`. */
  async call(key: IsolateKey, path: string, request: { method: string; headers: Record<string, string>; body: Buffer }, deadlineMs: number): Promise<IsolateAnswer> {
    const entry = this.entryOf(key);
    entry.calls += 1;
    try {
      if (this.entries.size > this.maxProcesses) void this.evictOverflow();
      const process = await entry.starting;
      try {
        return await process.call(path, request, deadlineMs);
      } catch (err) {
        if (err instanceof AnswerTooLargeError) throw new IsolateError(`the integration's answer was cut off: ${err.message}`, 502);
        const why = process.endReason === 'deadline' ? `it did not answer within ${deadlineMs / 1000} s` : process.endReason === 'memory' ? `it used more than ${(this.options.memoryLimitBytes ?? 128 * MiB) / MiB} MiB` : 'its isolate stopped';
        this.forget(key, process);
        throw new IsolateError(`the integration was stopped: ${why}`, process.endReason === 'deadline' ? 504 : 502);
      }
    } finally {
      entry.calls -= 1;
    }
  }

  private get maxProcesses(): number {
    return this.options.maxProcesses ?? 64;
  }

  /** Warm processes, with their cold start and resident memory, for the bench and operators. */
  warm(): { key: string; pid: number; coldStartMs?: number }[] {
    return [...this.entries].filter(([, entry]) => entry.process?.alive).map(([key, entry]) => ({ key, pid: entry.process!.pid, coldStartMs: entry.coldStartMs }));
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map((entry) => entry.starting.then((process) => process.dispose(), () => undefined)));
  }

  private entryOf(key: IsolateKey): Entry {
    const id = `${key.integration}@${key.version}/${key.installation}`;
    let entry = this.entries.get(id);
    if (entry?.process && !entry.process.alive) {
      this.forget(key, entry.process);
      entry = undefined;
    }
    if (!entry) {
      const started = Date.now();
      const created: Entry = { lastUsed: started, starting: this.start(key), calls: 0 };
      entry = created;
      this.entries.set(id, created);
      created.starting.then(
        (process) => {
          created.process = process;
          created.coldStartMs = Date.now() - started;
        },
        () => this.entries.delete(id),
      );
    }
    entry.lastUsed = Date.now();
    return entry;
  }

  private async start(key: IsolateKey): Promise<WorkerdProcess> {
    const script = await this.options.loadScript(key.integration, key.version);
    try {
      const process = await WorkerdProcess.start({
        modules: [
          { name: 'host.js', type: 'ESModule', contents: RUNTIME_HOST_SOURCE },
          { name: 'integration.js', type: 'ESModule', contents: script },
        ],
        memoryLimitBytes: this.options.memoryLimitBytes ?? 128 * MiB,
        outbound: this.options.outbound,
        bindings: this.options.bindings,
      });
      this.options.onStarted?.(process);
      return process;
    } catch (err) {
      if (err instanceof WorkerdStartError) throw new IsolateError(`the integration failed to load: ${err.message}`, 500);
      throw err;
    }
  }

  private forget(key: IsolateKey, process: WorkerdProcess): void {
    const id = `${key.integration}@${key.version}/${key.installation}`;
    if (this.entries.get(id)?.process === process) this.entries.delete(id);
    void process.dispose();
  }

  /**
   * Stops the least recently used past the cap, among those no call is waiting for or in:
   * one tenant's many installations must not stop another's call halfway (a 502 to it).
   * While all are busy the cap is exceeded; the next call past it trims.
   */
  private async evictOverflow(): Promise<void> {
    const idle = [...this.entries].filter(([, entry]) => entry.calls === 0).sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
    for (const [id, entry] of idle.slice(0, Math.max(0, this.entries.size - this.maxProcesses))) {
      this.entries.delete(id);
      await entry.starting.then((process) => process.dispose(), () => undefined);
    }
  }

  /**
   * Stops (every 10 s; never one a call is in) those that spend CPU long after their last
   * call, the idle, then the least recently used while the warm ones hold more than the budget.
   */
  async evict(): Promise<void> {
    const now = Date.now();
    const idleSince = now - (this.options.idleMs ?? 5 * 60_000);
    let resident = 0;
    const warm = [...this.entries].filter(([, entry]) => entry.process).sort(([, a], [, b]) => b.lastUsed - a.lastUsed);
    for (const [id, entry] of warm) {
      const spinning = this.spendsInBackground(entry, now);
      if (!spinning) resident += residentBytes(entry.process!.pid) ?? 0;
      if (!spinning && (entry.calls > 0 || (entry.lastUsed >= idleSince && resident <= (this.options.memoryBudgetBytes ?? 1024 * MiB)))) continue;
      if (spinning) isolatesStopped.inc({ reason: 'background_cpu' });
      this.entries.delete(id);
      await entry.process!.dispose();
    }
  }

  /** Whether a process with no call for BACKGROUND_MS spent more than BACKGROUND_CPU_SHARE of a core since last looked at. */
  private spendsInBackground(entry: Entry, now: number): boolean {
    if (entry.calls > 0 || entry.lastUsed >= now - (this.options.backgroundMs ?? BACKGROUND_MS)) {
      entry.cpu = undefined;
      return false;
    }
    const seconds = cpuSecondsOf(entry.process!.pid);
    if (seconds === undefined) return false;
    const before = entry.cpu;
    entry.cpu = { seconds, at: now };
    return before !== undefined && now > before.at && (seconds - before.seconds) / ((now - before.at) / 1000) > BACKGROUND_CPU_SHARE;
  }
}
