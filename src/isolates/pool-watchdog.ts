import { cpuSecondsOf, residentBytes } from '../system/procfs';
import { isolatesStopped } from '../metrics';
import { WAIT_UNTIL_MS } from './runtime-host';
import type { NodeService, WorkerdProcess, WorkerdProcessOptions } from './workerd-process';
import { egressRefusal, refusalBody } from './egress';
import type { Entry } from './pool-entry';

export interface WatchdogOptions {
  /**
   * Resident memory of a process (128 MiB unless set): past it the process takes no new
   * call and is replaced, and stopped once the calls in it have ended; past
   * MEMORY_KILL_FACTOR times it, it is killed at once, its calls failing.
   */
  memoryLimitBytes?: number;
  /** A process unused this long after its last call ended is stopped. */
  idleMs?: number;
  /** Past this long after its last call ended, a process spending CPU or asking for anything is stopped (BACKGROUND_MS unless set). */
  backgroundMs?: number;
  /** Past this much resident memory in all, the least recently used are stopped. */
  memoryBudgetBytes?: number;
}

/** A process's ways out, as it is started with them. */
export type Ways = Pick<WorkerdProcessOptions, 'outbound' | 'bindings'>;

/** What the watchdog sees of the pool: its entries by id, and how it stops one (see IsolatePool.stop). */
export interface Watched {
  readonly entries: ReadonlyMap<string, Entry>;
  stop(entry: Entry, process: WorkerdProcess, after?: Promise<void>): Promise<void>;
}

/**
 * Past the 30 s its last call's waitUntil work may run on (and a grace), nothing the
 * platform asked for runs in an isolate: what it does then is work left behind that no
 * bound reaches (a synchronous loop stops the SDK's 30 s timer; cloudflare:workers' own
 * waitUntil skips it). A probe's spinners ran until idle eviction, 5 minutes, and slowed
 * other tenants; its fetch a minute after the call went out.
 */
const BACKGROUND_MS = WAIT_UNTIL_MS + 5000;
/** More than this share of a core, past BACKGROUND_MS, stops the process (an idle one spends about none). */
const BACKGROUND_CPU_SHARE = 0.1;

const MiB = 1024 * 1024;

/**
 * A process past its memory bound is killed only past this multiple of it: until then it
 * finishes its calls while a new process takes the next ones (a busy handler's heap grows
 * past the bound with garbage; only a runaway allocation reaches this).
 */
const MEMORY_KILL_FACTOR = 1.5;

/**
 * The pool's limits on its processes beyond a call's deadline: the memory bounds each
 * starts with, and a sweep every 10 s that stops those spending CPU or asking for anything
 * long after their last call, the idle, and the least recently used over the memory budget.
 */
export class PoolWatchdog {
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly options: WatchdogOptions,
    private readonly pool: Watched,
  ) {
    this.sweeper = setInterval(() => void this.evict(), 10_000).unref();
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  private get memoryLimit(): number {
    return this.options.memoryLimitBytes ?? 128 * MiB;
  }

  /** The memory bounds a process starts with: past recycleAboveBytes it is replaced, past memoryLimitBytes killed. */
  get memoryBounds(): Required<Pick<WorkerdProcessOptions, 'memoryLimitBytes' | 'recycleAboveBytes'>> {
    return { memoryLimitBytes: this.memoryLimit * MEMORY_KILL_FACTOR, recycleAboveBytes: this.memoryLimit };
  }

  /** Why a call failed in a process that was killed or is gone, as its caller hears it. */
  whyStopped(process: WorkerdProcess, deadlineMs: number): string {
    return process.endReason === 'deadline' ? `it did not answer within ${deadlineMs / 1000} s` : process.endReason === 'memory' ? `it used more than ${(this.memoryLimit * MEMORY_KILL_FACTOR) / MiB} MiB` : 'its isolate stopped';
  }

  /**
   * Stops (every 10 s; never one a call is in) those that spend CPU long after their last
   * call, the idle, then the least recently used while the warm ones hold more than the budget.
   */
  async evict(): Promise<void> {
    const now = Date.now();
    const idleSince = now - (this.options.idleMs ?? 5 * 60_000);
    let resident = 0;
    // Most recently used first: those a call is in, then by the end of their last call.
    const recency = (entry: Entry) => (entry.calls > 0 ? Infinity : entry.lastEnded);
    const warm = [...this.pool.entries.values()].filter((entry) => entry.process).sort((a, b) => recency(b) - recency(a));
    for (const entry of warm) {
      // Taken out since (to make room, or stopped for work left behind) while an earlier one was being stopped.
      if (this.pool.entries.get(entry.id) !== entry) continue;
      const spinning = this.spendsInBackground(entry, now);
      if (!spinning) resident += residentBytes(entry.process!.pid) ?? 0;
      // Over its memory, an idle one goes too (its next call would replace it).
      const dead = entry.calls === 0 && (!entry.process!.alive || entry.process!.overMemory);
      // Idle from the end of its last call: one whose call began long ago (a slow cold start, a long call) has not been idle since.
      if (!spinning && !dead && (entry.calls > 0 || (entry.lastEnded >= idleSince && resident <= (this.options.memoryBudgetBytes ?? 1024 * MiB)))) continue;
      if (spinning) isolatesStopped.inc({ reason: 'background_cpu' });
      else if (entry.process!.overMemory && entry.process!.alive) isolatesStopped.inc({ reason: 'memory' });
      await this.pool.stop(entry, entry.process!);
    }
  }

  /**
   * A process's ways out (egress, the API binding), refused once its work is left behind:
   * background work that spends little CPU (a fetch a minute after the call, through
   * cloudflare:workers' own waitUntil) is not found by its CPU, but is by what it asks for.
   * The process is stopped at its first such request.
   */
  heeding(entry: Entry, { outbound, bindings }: Required<Ways>): Ways {
    const message = `integration code's work ${(this.options.backgroundMs ?? BACKGROUND_MS) / 1000} s after its last call ended, past the ${WAIT_UNTIL_MS / 1000} s of its waitUntil work; the isolate is stopped`;
    const stoppedIfLeftBehind = (): boolean => {
      if (!this.leftBehind(entry)) return false;
      if (this.pool.entries.get(entry.id) === entry && entry.process) {
        isolatesStopped.inc({ reason: 'work_left_behind' });
        // On the next turn: not from inside the handling of the process's own request.
        void this.pool.stop(entry, entry.process, new Promise((resolve) => setImmediate(resolve)));
      }
      return true;
    };
    return {
      outbound: async (request) => (stoppedIfLeftBehind() ? egressRefusal(message) : outbound(request)),
      bindings: Object.fromEntries(
        Object.entries(bindings).map(([name, node]): [string, NodeService] => [
          name,
          (req, res) => {
            if (!stoppedIfLeftBehind()) return node(req, res);
            res.writeHead(403, { 'content-type': 'application/json' }).end(refusalBody(message));
          },
        ]),
      ),
    };
  }

  /** Whether whatever the process does now is work left behind: no call is in it, and the last ended more than BACKGROUND_MS ago. */
  private leftBehind(entry: Entry, now = Date.now()): boolean {
    return entry.calls === 0 && entry.lastEnded < now - (this.options.backgroundMs ?? BACKGROUND_MS);
  }

  /** Whether a process with no call for BACKGROUND_MS spent more than BACKGROUND_CPU_SHARE of a core since last looked at. */
  private spendsInBackground(entry: Entry, now: number): boolean {
    if (!this.leftBehind(entry, now)) {
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
