import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Linux /proc readers: which process listens where. Elsewhere they find nothing. */

function readOr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function readdirOr(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Socket inode -> port, for every listening TCP socket of this network namespace. */
export function listeningSockets(): Map<string, number> {
  const byInode = new Map<string, number>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readOr(file).split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // Field 3 is the state (0A: LISTEN), field 9 the inode.
      if (fields[3] === '0A' && fields[1] && fields[9]) byInode.set(fields[9], parseInt(fields[1].split(':')[1]!, 16));
    }
  }
  return byInode;
}

/** Parent pid -> its children, for every process. */
function childrenByParent(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const entry of readdirOr('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")".
    const stat = readOr(`/proc/${entry}/stat`);
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent)!.push(Number(entry));
  }
  return children;
}

/** The given processes and all their descendants. */
export function processTrees(roots: Iterable<number>): Set<number> {
  const children = childrenByParent();
  const found = new Set<number>();
  const queue = [...roots];
  while (queue.length) {
    const pid = queue.pop()!;
    if (found.has(pid)) continue;
    found.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

export function childrenOf(pid: number): number[] {
  return childrenByParent().get(pid) ?? [];
}

export function socketInodes(pid: number): string[] {
  return readdirOr(`/proc/${pid}/fd`)
    .map((fd) => {
      try {
        return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      } catch {
        return undefined;
      }
    })
    .filter((inode): inode is string => inode !== undefined);
}

/** Ports the given processes listen on. */
export function listeningPorts(pids: Iterable<number>): Set<number> {
  const sockets = listeningSockets();
  const ports = new Set<number>();
  for (const pid of pids) {
    for (const inode of socketInodes(pid)) {
      const port = sockets.get(inode);
      if (port !== undefined) ports.add(port);
    }
  }
  return ports;
}

/** Which of the given processes listens on `port` (the host's socket table read once). */
export function listenerOf(port: number, pids: Iterable<number>): number | undefined {
  const sockets = listeningSockets();
  for (const pid of pids) if (socketInodes(pid).some((inode) => sockets.get(inode) === port)) return pid;
  return undefined;
}

/** The fields of /proc/<pid>/stat after the command name (its state, field 3, first), or none once it is gone. */
function statFields(pid: number): string[] {
  const stat = readOr(`/proc/${pid}/stat`);
  return stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ') : [];
}

/** When a process started (clock ticks since boot, /proc stat field 22): with its pid, it names one process for good. */
export function startTimeOf(pid: number): string {
  return statFields(pid)[19] ?? '';
}

/** CPU time a process has used, all its threads, user and system (fields 14 and 15, in Linux's 100 ticks a second), or undefined once it is gone. */
export function cpuSecondsOf(pid: number): number | undefined {
  const fields = statFields(pid);
  return fields.length ? (Number(fields[11]) + Number(fields[12])) / 100 : undefined;
}

/**
 * CPU time of a process and everything it started: its own, its children's that it has
 * reaped (fields 16 and 17), and its live descendants' (a PostgreSQL server's backends,
 * a worker's workerd processes).
 */
export function treeCpuSecondsOf(pid: number): number | undefined {
  const fields = statFields(pid);
  if (!fields.length) return undefined;
  const own = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
  return childrenOf(pid).reduce((sum, child) => sum + (treeCpuSecondsOf(child) ?? 0), own);
}

/** A process's command name (its executable's, once it has exec'd), or '' once it is gone. */
export function commandOf(pid: number): string {
  return readOr(`/proc/${pid}/comm`).trim();
}

/** Resident set size in bytes, or undefined once the process is gone. */
export function residentBytes(pid: number): number | undefined {
  const statm = readOr(`/proc/${pid}/statm`);
  return statm ? Number(statm.split(' ')[1]) * 4096 : undefined;
}

/**
 * Proportional set size in bytes (smaps_rollup's Pss): pages shared by several processes
 * counted once over them, so that a server's processes (PostgreSQL's backends and their
 * shared buffers) add up to what they hold together, not to a multiple of it.
 */
export function proportionalBytes(pid: number): number | undefined {
  const pss = /^Pss:\s+(\d+) kB$/m.exec(readOr(`/proc/${pid}/smaps_rollup`) ?? '');
  return pss ? Number(pss[1]) * 1024 : undefined;
}

/** Whether a process of this pid exists, asked of the kernel rather than /proc: only ESRCH says no. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

export function isAlive(pid: number): boolean {
  const state = statFields(pid)[0];
  // A zombie (Z) has exited and only waits for its parent to reap it.
  return state !== undefined && state !== 'Z';
}
