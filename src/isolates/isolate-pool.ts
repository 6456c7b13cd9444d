import type { Request as MiniflareRequest, Response as MiniflareResponse } from 'miniflare';
import { isolateProcesses, isolateStartsWaiting, isolatesStopped } from '../metrics';
import { ISOLATE_MAX_PROCESSES } from '../config';
import { RUNTIME_HOST_SOURCE, RUNTIME_PRELUDE_SOURCE, WAIT_UNTIL_MS } from './runtime-host';
import { AnswerTooLargeError, WorkerdProcess, WorkerdStartError, type IsolateAnswer, type NodeService } from './workerd-process';
import type { CpuGroups } from './cpu-groups';
import { FairQueue } from './fair-queue';
import { IsolateError } from './isolate-error';
import type { Entry } from './pool-entry';
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

export interface IsolatePoolOptions extends WatchdogOptions {
  /** The bundle of an integration version (ES module). */
  loadScript(integration: string, version: number): Promise<string>;
  outbound(request: MiniflareRequest): Promise<MiniflareResponse>;
  /** Service bindings of the isolate of `key`: whatever they carry, they know whose it is. */
  bindings(key: IsolateKey): Record<string, NodeService>;
  /** Called with each new process, so that guards learn its ports. */
  onStarted?(process: WorkerdProcess): void;
  /**
   * Processes at most, starting or warm (ISOLATE_MAX_PROCESSES unless set): a hard bound, so that
   * memory is bounded by it times memoryLimitBytes (MEMORY_KILL_FACTOR times that for the
   * moments a process past it finishes its calls), whatever a burst asks for.
   */
  maxProcesses?: number;
  /** How long a call waits for room in the pool before it is refused (ADMISSION_WAIT_MS unless set). */
  admissionWaitMs?: number;
  /** Where each organization's processes share the CPU fairly (none: as the kernel has it). */
  cpuGroups?: CpuGroups;
}

/**
 * One organization's processes at most, as a share of the cap: a tenant whose many
 * installations are called at once (a burst, or a hostile one) leaves room for three others.
 */
const ORGANIZATION_SHARE = 1 / 4;
/** How long a call waits for a process to become free before it is refused (503, retried by callers and deliveries). */
const ADMISSION_WAIT_MS = 5000;

const platformStopping = () => new IsolateError('the platform is stopping', 503);

/** A new process waiting for room in the pool, with the calls waiting for it. */
interface Waiter {
  entry: Entry;
  /** Admitted: it starts once `room` resolves (the process stopped for it has exited). */
  proceed(room: Promise<void>): void;
  refuse(err: IsolateError): void;
}

/**
 * Warm isolates for integration code: started on first call, reused, replaced when killed
 * (deadline, memory, crash), and stopped when idle or over the memory budget. A process
 * that misbehaves takes down only its own installation's calls. A new process needs room:
 * under the cap and its organization's share, or made by stopping an idle one; failing
 * that, its call waits for one to become idle, then is refused. The limits beyond a
 * call's deadline are PoolWatchdog's.
 */
export class IsolatePool {
  private readonly entries = new Map<string, Entry>();
  private readonly waiting: Waiter[] = [];
  /** Admitted entries (counted against the cap: at most maxProcesses), and how many of them each organization has. */
  private readonly admitted = new Set<Entry>();
  private readonly countedOf = new Map<string, number>();
  /**
   * Admitted entries whose process is stopped and has not exited: out of the pool for
   * calls, still counted (the cap bounds what runs, and their organization's share) until
   * they are gone. One stopped to make room for a given start is not among them: it hands
   * its room to that start instead, which waits for its exit.
   */
  private readonly exiting = new Set<Entry>();
  /** Processes being stopped: the pool closes once they have exited. */
  private readonly exits = new Set<Promise<void>>();
  /** Process starts, one at a time, organizations in turn (see FairQueue). */
  private readonly starts = new FairQueue();
  private readonly watchdog: PoolWatchdog;
  private closed = false;

  constructor(private readonly options: IsolatePoolOptions) {
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
      if (entry.calls === 0 && this.admitted.has(entry)) this.admitWaiting();
    }
  }

  private get maxProcesses(): number {
    return this.options.maxProcesses ?? ISOLATE_MAX_PROCESSES;
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
    for (const entry of entries) this.remove(entry);
    // Those being replaced (over their memory) stop now too, not once their calls end.
    for (const entry of this.exiting) entry.drained?.();
    for (const waiter of [...this.waiting]) this.unqueue(waiter).refuse(platformStopping());
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
      created.starting = this.admit(created).then(() => {
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
    const counted = current && this.admitted.has(entry);
    if (counted) this.exiting.add(entry);
    return this.exited(
      after.then(() => process.dispose()),
      () => {
        if (!counted) return;
        this.exiting.delete(entry);
        this.release(entry);
        this.admitWaiting();
      },
    );
  }

  /**
   * Whether a stopped process frees its room in a moment: one that no call holds. One being
   * replaced over its memory may finish its calls for up to a call's 10 s, longer than a
   * start waits for room: the start stops an idle process instead.
   */
  private exitingSoon(): boolean {
    for (const entry of this.exiting) if (entry.calls === 0) return true;
    return false;
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
    const freesRoom = this.admitted.has(entry);
    this.remove(entry);
    // A refused start frees nothing: thousands refused at once must not each rescan the queue.
    if (freesRoom) this.admitWaiting();
  }

  private remove(entry: Entry): void {
    this.entries.delete(entry.id);
    this.release(entry);
  }

  /** Its room and its organization's share are free. */
  private release(entry: Entry): void {
    if (!this.admitted.delete(entry)) return;
    const left = this.countedOf.get(entry.organization)! - 1;
    if (left) this.countedOf.set(entry.organization, left);
    else this.countedOf.delete(entry.organization);
    isolateProcesses.dec();
  }

  private unqueue(waiter: Waiter): Waiter {
    const at = this.waiting.indexOf(waiter);
    if (at >= 0) {
      this.waiting.splice(at, 1);
      isolateStartsWaiting.dec();
    }
    return waiter;
  }

  /** Room for a new process now, or once a process becomes idle within the wait; refused (503) after it. */
  private admit(entry: Entry): Promise<void> {
    const room = this.tryAdmit(entry, this.idleByRank());
    if (room) return room;
    const waitMs = this.options.admissionWaitMs ?? ADMISSION_WAIT_MS;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.unqueue(waiter).refuse(new IsolateError(`the platform runs as many integration processes as it may (${this.maxProcesses}, ${this.shareOfOrganization} an organization) and none became free within ${waitMs / 1000} s; try again shortly`, 503));
      }, waitMs);
      const end = <T>(settle: (value: T) => void) => (value: T) => {
        clearTimeout(timer);
        settle(value);
      };
      const waiter: Waiter = { entry, proceed: end(resolve), refuse: end(reject) };
      this.waiting.push(waiter);
      isolateStartsWaiting.inc();
    });
  }

  /**
   * Admits those waiting, first come first served, each as soon as there is room for it
   * (another organization's may come first). One pass reads the entries once, whatever
   * waits: a burst of many installations must not make each call's end cost its square.
   */
  private admitWaiting(): void {
    if (this.waiting.length === 0) return;
    const idle = this.idleByRank();
    /** Organizations at their share with no idle process of their own: none of theirs is admitted in this pass (the idle only shrink). */
    const full = new Set<string>();
    for (const waiter of [...this.waiting]) {
      if (full.has(waiter.entry.organization)) continue;
      const room = this.tryAdmit(waiter.entry, idle);
      if (room) this.unqueue(waiter).proceed(room);
      // At the cap with no idle process left, none of the others can be admitted either.
      else if (this.admitted.size >= this.maxProcesses && idle.length === 0) break;
      else full.add(waiter.entry.organization);
    }
  }

  private get shareOfOrganization(): number {
    return Math.max(1, Math.floor(this.maxProcesses * ORGANIZATION_SHARE));
  }

  /**
   * The idle processes in the order to stop them: dead ones, then those whose waitUntil
   * work is over, then those whose work may still run; the least recently used first in each.
   * A process a call is in or waiting for is never among them.
   */
  private idleByRank(): Entry[] {
    const now = Date.now();
    const rank = (entry: Entry) => (!entry.process!.alive ? 0 : entry.lastEnded < now - WAIT_UNTIL_MS ? 1 : 2);
    return [...this.admitted].filter((entry) => entry.calls === 0 && entry.process && !this.exiting.has(entry)).sort((a, b) => rank(a) - rank(b) || a.lastEnded - b.lastEnded);
  }

  /**
   * Admits an entry under the cap and its organization's share, stopping the first of
   * `idle` (taken out of it) if that makes room: the organization's own once it holds its
   * share. Answers when the entry may start (once the process stopped for it has exited),
   * or nothing if there is no room.
   */
  private tryAdmit(entry: Entry, idle: Entry[]): Promise<void> | undefined {
    const atShare = (this.countedOf.get(entry.organization) ?? 0) >= this.shareOfOrganization;
    if (!atShare && this.admitted.size < this.maxProcesses) {
      this.markAdmitted(entry);
      return Promise.resolve();
    }
    // A process exiting frees its room in a moment: the start waits for it rather than stop another.
    if (!atShare && this.exitingSoon()) return undefined;
    const at = atShare ? idle.findIndex((other) => other.organization === entry.organization) : 0;
    const victim = idle[at];
    if (!victim) return undefined;
    idle.splice(at, 1);
    // Its room is the entry's at once (counted), its process gone before the entry's starts.
    this.remove(victim);
    isolatesStopped.inc({ reason: 'make_room' });
    this.markAdmitted(entry);
    return this.exited(victim.process!.dispose());
  }

  private markAdmitted(entry: Entry): void {
    this.admitted.add(entry);
    this.countedOf.set(entry.organization, (this.countedOf.get(entry.organization) ?? 0) + 1);
    isolateProcesses.inc();
  }
}
