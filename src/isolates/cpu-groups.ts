import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isAlive } from '../system/procfs';

/** Where a cpu controller lets this process make groups: cgroup v1's cpu hierarchy, or v2 with cpu delegated. */
interface Hierarchy {
  /** This process's own group in it: the platform's groups go below. */
  own: string;
  /** The file of a group's CPU weight, and a group's weight by default (that of one task). */
  weightFile: 'cpu.shares' | 'cpu.weight';
  defaultWeight: number;
}

/** A pool's group is named `integration-platform-<pid>-<n>`: several pools in one process (tests) keep apart. */
const GROUP_PREFIX = 'integration-platform-';
let pools = 0;

/** The cpu hierarchy this process may make groups in, if any (a container without delegation has none). */
function findHierarchy(): Hierarchy | undefined {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  const v1 = lines.map((line) => line.split(':')).find(([, controllers]) => controllers!.split(',').includes('cpu'));
  if (v1 && existsSync('/sys/fs/cgroup/cpu/cpu.shares')) return { own: path.join('/sys/fs/cgroup/cpu', v1[2]!), weightFile: 'cpu.shares', defaultWeight: 1024 };
  const v2 = lines.find((line) => line.startsWith('0::'));
  const own = v2 && path.join('/sys/fs/cgroup', v2.slice(3));
  if (own && existsSync(path.join(own, 'cgroup.subtree_control')) && readFileSync(path.join(own, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('cpu')) return { own, weightFile: 'cpu.weight', defaultWeight: 100 };
  return undefined;
}

/**
 * CPU shared fairly between organizations' integration code: each organization's workerd
 * processes go into a cgroup of their own, all of equal weight, under one group for this
 * platform process. An organization running 8 endless loops gets the CPU one running a
 * single call would, no more, when both want it. The platform's group weighs as much as a
 * task on each core beside the platform's own tasks (outside it): integration code as a
 * whole can neither starve the platform nor be starved by it. Where no cpu controller can
 * be written (not root, no delegation), `open` answers nothing and processes share the CPU
 * as the kernel has it.
 */
export class CpuGroups {
  private readonly organizations = new Set<string>();

  private constructor(private readonly root: string) {}

  static open(): { groups?: CpuGroups; why?: string } {
    try {
      const hierarchy = findHierarchy();
      if (!hierarchy) return { why: 'no cpu cgroup controller is writable here' };
      removeStale(hierarchy.own);
      const root = path.join(hierarchy.own, `${GROUP_PREFIX}${process.pid}-${++pools}`);
      mkdirSync(root, { recursive: true });
      writeFileSync(path.join(root, hierarchy.weightFile), String(hierarchy.defaultWeight * os.cpus().length));
      return { groups: new CpuGroups(root) };
    } catch (err) {
      return { why: (err as Error).message };
    }
  }

  /** Moves a process (all its threads) into its organization's group; a process gone already is no error. */
  assign(pid: number, organization: string): void {
    // Named by a hash: an organization id is the tenant's word, never a path.
    const group = path.join(this.root, `org-${createHash('sha256').update(organization).digest('hex').slice(0, 16)}`);
    if (!this.organizations.has(group)) {
      mkdirSync(group, { recursive: true });
      this.organizations.add(group);
    }
    try {
      writeFileSync(path.join(group, 'cgroup.procs'), String(pid));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }

  /** The groups go once their processes have exited (the pool closes first). */
  close(): void {
    for (const group of this.organizations) rmdirQuietly(group);
    rmdirQuietly(this.root);
  }
}

/** Groups of platform processes that are gone (killed before they could remove them), empty by then. */
function removeStale(own: string): void {
  for (const name of readdirSync(own)) {
    if (!name.startsWith(GROUP_PREFIX) || isAlive(Number(name.slice(GROUP_PREFIX.length).split('-')[0]))) continue;
    const group = path.join(own, name);
    for (const child of readdirSync(group, { withFileTypes: true })) if (child.isDirectory()) rmdirQuietly(path.join(group, child.name));
    rmdirQuietly(group);
  }
}

function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Still holding a process (it is exiting), or gone already: left for the next start's sweep.
  }
}
