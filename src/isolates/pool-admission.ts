import { isolateProcesses, isolateStartsWaiting, isolatesStopped } from '../metrics';
import { ISOLATE_MAX_PROCESSES } from '../config';
import { WAIT_UNTIL_MS } from './runtime-host';
import { IsolateError } from './isolate-error';
import type { Entry } from './pool-entry';

export interface AdmissionOptions {
  /**
   * Processes at most, starting or warm (ISOLATE_MAX_PROCESSES unless set): a hard bound, so that
   * memory is bounded by it times memoryLimitBytes (MEMORY_KILL_FACTOR times that for the
   * moments a process past it finishes its calls), whatever a burst asks for.
   */
  maxProcesses?: number;
  /** How long a call waits for room in the pool before it is refused (ADMISSION_WAIT_MS unless set). */
  admissionWaitMs?: number;
}

/**
 * One organization's processes at most, as a share of the cap: a tenant whose many
 * installations are called at once (a burst, or a hostile one) leaves room for three others.
 */
const ORGANIZATION_SHARE = 1 / 4;
/** How long a call waits for a process to become free before it is refused (503, retried by callers and deliveries). */
const ADMISSION_WAIT_MS = 5000;

/** A new process waiting for room in the pool, with the calls waiting for it. */
interface Waiter {
  entry: Entry;
  /** Admitted: it starts once `room` resolves (the process stopped for it has exited). */
  proceed(room: Promise<void>): void;
  refuse(err: IsolateError): void;
}

/**
 * Room in the pool for a new process: under the cap and its organization's share, or made
 * by stopping an idle one; failing that, its start waits for one to become idle, then is
 * refused. An entry holds its room from its admission until its process has exited.
 */
export class PoolAdmission {
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

  constructor(
    private readonly options: AdmissionOptions,
    /** Takes an idle entry out of the pool and stops its process, its room given to a start: resolves once it has exited. */
    private readonly stopForRoom: (idle: Entry) => Promise<void>,
  ) {}

  private get maxProcesses(): number {
    return this.options.maxProcesses ?? ISOLATE_MAX_PROCESSES;
  }

  private get shareOfOrganization(): number {
    return Math.max(1, Math.floor(this.maxProcesses * ORGANIZATION_SHARE));
  }

  /** Room for a new process now, or once a process becomes idle within the wait; refused (503) after it. */
  admit(entry: Entry): Promise<void> {
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

  /** A call into the entry has ended: with none left in it, its process may make room for those waiting. */
  callEnded(entry: Entry): void {
    if (entry.calls === 0 && this.admitted.has(entry)) this.admitWaiting();
  }

  /** The entry's process is being stopped: if admitted, it keeps its room until `exited`. Answers whether it does. */
  stopping(entry: Entry): boolean {
    if (!this.admitted.has(entry)) return false;
    this.exiting.add(entry);
    return true;
  }

  /** The process of an entry that kept its room while stopping has exited: its room goes to those waiting. */
  exited(entry: Entry): void {
    this.exiting.delete(entry);
    this.release(entry);
    this.admitWaiting();
  }

  /** The entry's start failed: its room, if it had one, goes to those waiting. */
  failed(entry: Entry): void {
    // A refused start frees nothing: thousands refused at once must not each rescan the queue.
    if (this.release(entry)) this.admitWaiting();
  }

  /** Its room and its organization's share are free; answers whether it held them. */
  release(entry: Entry): boolean {
    if (!this.admitted.delete(entry)) return false;
    const left = this.countedOf.get(entry.organization)! - 1;
    if (left) this.countedOf.set(entry.organization, left);
    else this.countedOf.delete(entry.organization);
    isolateProcesses.dec();
    return true;
  }

  /** The entries whose process is stopped and still holds its room. */
  exitingEntries(): Iterable<Entry> {
    return this.exiting;
  }

  /** Refuses every start waiting for room, each with an error of its own. */
  refuseWaiting(refusal: () => IsolateError): void {
    for (const waiter of [...this.waiting]) this.unqueue(waiter).refuse(refusal());
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

  private unqueue(waiter: Waiter): Waiter {
    const at = this.waiting.indexOf(waiter);
    if (at >= 0) {
      this.waiting.splice(at, 1);
      isolateStartsWaiting.dec();
    }
    return waiter;
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
    this.release(victim);
    isolatesStopped.inc({ reason: 'make_room' });
    this.markAdmitted(entry);
    return this.stopForRoom(victim);
  }

  private markAdmitted(entry: Entry): void {
    this.admitted.add(entry);
    this.countedOf.set(entry.organization, (this.countedOf.get(entry.organization) ?? 0) + 1);
    isolateProcesses.inc();
  }
}
