import type { Request as MiniflareRequest, Response as MiniflareResponse } from 'miniflare';
import { isolatesStopped } from '../metrics';
import { RUNTIME_HOST_SOURCE, RUNTIME_PRELUDE_SOURCE } from './runtime-host';
import { AnswerTooLargeError, WorkerdProcess, WorkerdStartError, type IsolateAnswer, type NodeService } from './workerd-process';
import type { CpuGroups } from './cpu-groups';
import { FairQueue } from './fair-queue';
import { IsolateError } from './isolate-error';
import type { Entry } from './pool-entry';
import { PoolAdmission, type AdmissionOptions } from './pool-admission';
import { PoolWatchdog, type Ways, type WatchdogOptions } from './pool-watchdog';

/**
 * At most one isolate per integration version and installation, each in a workerd process
 * of its own (DESIGN.md §2: isolated from the platform and from other installations); the
 * installing organization's processes count against its share of the pool.
 */
export interface IsolateKey {
  integration: string;
  version: number;
  installation: string;
  organization: string;
}

export interface IsolatePoolOptions extends AdmissionOptions, WatchdogOptions {
  /** The bundle of an integration version (ES module). */
  loadScript(integration: string, version: number): Promise<string>;
  outbound(request: MiniflareRequest): Promise<MiniflareResponse>;
  /** Service bindings of the isolate of `key`: whatever they carry, they know whose it is. */
  bindings(key: IsolateKey): Record<string, NodeService>;
  /** Called with each new process, so that guards learn its ports. */
  onStarted?(process: WorkerdProcess): void;
  /** Where each organization's processes share the CPU fairly (none: as the kernel has it). */
  cpuGroups?: CpuGroups;
}

const platformStopping = () => new IsolateError('the platform is stopping', 503);

/**
 * Warm isolates for integration code: started on first call, reused, replaced when killed
 * (deadline, memory, crash), and stopped when idle or over the memory budget. A process
 * that misbehaves takes down only its own installation's calls. A new process needs room:
 * under the cap and its organization's share, or made by stopping an idle one; failing
 * that, its call waits for one to become idle, then is refused (see PoolAdmission). The
 * limits beyond a call's deadline are PoolWatchdog's.
 */
export class IsolatePool {
  private readonly entries = new Map<string, Entry>();
  /** Processes being stopped: the pool closes once they have exited. */
  private readonly exits = new Set<Promise<void>>();
  /** Process starts, one at a time, organizations in turn (see FairQueue). */
  private readonly starts = new FairQueue();
  private readonly admission: PoolAdmission;
  private readonly watchdog: PoolWatchdog;
  private closed = false;

  constructor(private readonly options: IsolatePoolOptions) {
    this.admission = new PoolAdmission(options, (idle) => {
      this.entries.delete(idle.id);
      return this.exited(idle.process!.dispose());
    });
    this.watchdog = new PoolWatchdog(options, { entries: this.entries, stop: (entry, process, after) => this.stop(entry, process, after) });
  }

  /** A call into the key's isolate, bounded by `deadlineMs`. */
  async call(key: IsolateKey, path: string, request: { method: string; headers: Record<string, string>; body: Buffer }, deadlineMs: number): Promise<IsolateAnswer> {
    const entry = this.entryOf(key);
    entry.calls += 1;
    try {
      const process = await entry.starting;
      try {
        return await process.call(path, request, deadlineMs);
      } catch (err) {
        if (err instanceof AnswerTooLargeError) throw new IsolateError(`the integration's answer was cut off: ${err.message}`, 502);
        // A live process whose call failed (a connection error on a busy machine) is not dead:
        // it keeps serving; only one that was killed or is gone is stopped and replaced.
        if (!process.endReason && process.alive) throw new IsolateError(`the call into the integration failed: ${(err as Error).message}`, 502);
        const why = this.watchdog.whyStopped(process, deadlineMs);
        void this.stop(entry, process);
        throw new IsolateError(`the integration was stopped: ${why}`, process.endReason === 'deadline' ? 504 : 502);
      }
    } finally {
      entry.calls -= 1;
      entry.lastEnded = Date.now();
      if (entry.calls === 0) entry.drained?.();
      this.admission.callEnded(entry);
    }
  }

  /** Warm processes, with their cold start and resident memory, for the bench and operators. */
  warm(): { key: string; pid: number; coldStartMs?: number }[] {
    return [...this.entries].filter(([, entry]) => entry.process?.alive).map(([key, entry]) => ({ key, pid: entry.process!.pid, coldStartMs: entry.coldStartMs }));
  }

  /** The watchdog's sweep, now rather than at its next turn. */
  evict(): Promise<void> {
    return this.watchdog.evict();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.watchdog.close();
    const entries = [...this.entries.values()];
    for (const entry of entries) {
      this.entries.delete(entry.id);
      this.admission.release(entry);
    }
    // Those being replaced (over their memory) stop now too, not once their calls end.
    for (const entry of this.admission.exitingEntries()) entry.drained?.();
    this.admission.refuseWaiting(platformStopping);
    await Promise.all([...entries.map((entry) => entry.starting.then((process) => process.dispose(), () => undefined)), ...this.exits]);
    this.options.cpuGroups?.close();
  }

  private entryOf(key: IsolateKey): Entry {
    // A process started now would outlive the pool.
    if (this.closed) throw platformStopping();
    const id = `${key.integration}@${key.version}/${key.installation}`;
    let entry = this.entries.get(id);
    // Known to be gone (killed, or found gone by the memory watchdog), or over its memory:
    // replaced now. One over its memory is stopped once the calls in it have ended.
    if (entry?.process && (entry.process.endReason || entry.process.overMemory)) {
      const running = !entry.process.endReason;
      if (running) isolatesStopped.inc({ reason: 'memory' });
      void this.stop(entry, entry.process, running ? this.drained(entry) : undefined);
      entry = undefined;
    }
    if (!entry) {
      // Its start waits for its admission, which marks it: `starting` is set before anything reads it.
      const created = { id, organization: key.organization, lastEnded: Date.now(), calls: 0 } as Entry;
      let started = 0;
      created.starting = this.admission.admit(created).then(() => {
        // Closed while it waited for the process stopped for it to exit.
        if (this.closed) throw platformStopping();
        started = Date.now();
        return this.start(key, this.watchdog.heeding(created, { outbound: this.options.outbound, bindings: this.options.bindings(key) }));
      });
      entry = created;
      this.entries.set(id, created);
      created.starting.then(
        (process) => {
          created.process = process;
          created.coldStartMs = Date.now() - started;
        },
        () => this.drop(created),
      );
    }
    return entry;
  }

  private async start(key: IsolateKey, ways: Ways): Promise<WorkerdProcess> {
    const script = await this.options.loadScript(key.integration, key.version);
    try {
      const process = await this.starts.run(key.organization, () => WorkerdProcess.start({
        modules: [
          { name: 'host.js', type: 'ESModule', contents: RUNTIME_HOST_SOURCE },
          { name: 'prelude.js', type: 'ESModule', contents: RUNTIME_PRELUDE_SOURCE },
          { name: 'integration.js', type: 'ESModule', contents: script },
        ],
        ...this.watchdog.memoryBounds,
        outbound: ways.outbound,
        bindings: ways.bindings,
      }));
      this.options.onStarted?.(process);
      this.options.cpuGroups?.assign(process.pid, key.organization);
      return process;
    } catch (err) {
      if (err instanceof WorkerdStartError) throw new IsolateError(`the integration failed to load: ${err.message}`, 500);
      throw err;
    }
  }

  /**
   * Takes an entry out of the pool and stops its process (once `after` resolves: on the
   * next turn if the process asked for it from inside). Its room, and its organization's
   * share, go to those waiting once the process has exited.
   */
  private stop(entry: Entry, process: WorkerdProcess, after: Promise<void> = Promise.resolve()): Promise<void> {
    const current = this.entries.get(entry.id) === entry && entry.process === process;
    if (current) this.entries.delete(entry.id);
    const counted = current && this.admission.stopping(entry);
    return this.exited(
      after.then(() => process.dispose()),
      () => {
        if (counted) this.admission.exited(entry);
      },
    );
  }

  /** Once no call is in the entry (it takes no new ones: it is out of the pool's entries). */
  private drained(entry: Entry): Promise<void> {
    return entry.calls === 0 ? Promise.resolve() : new Promise((resolve) => (entry.drained = resolve));
  }

  /** Kept until `exit` resolves (close waits for it), then `then`. */
  private exited(exit: Promise<void>, then: () => void = () => undefined): Promise<void> {
    const tracked = exit.finally(() => {
      this.exits.delete(tracked);
      then();
    });
    this.exits.add(tracked);
    return tracked;
  }

  /** Takes out an entry whose start failed: its room goes to those waiting. */
  private drop(entry: Entry): void {
    if (this.entries.get(entry.id) !== entry) return;
    this.entries.delete(entry.id);
    this.admission.failed(entry);
  }
}
