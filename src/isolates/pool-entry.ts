import type { WorkerdProcess } from './workerd-process';

/** One installation's process as the pool keeps it, and as its admission and its watchdog read it. */
export interface Entry {
  id: string;
  organization: string;
  starting: Promise<WorkerdProcess>;
  process?: WorkerdProcess;
  /** When its last call ended: idle from then (the least recently used goes first), and its waitUntil work may run WAIT_UNTIL_MS from then. */
  lastEnded: number;
  coldStartMs?: number;
  /** Calls waiting for it or in it: it is not stopped under them to make room for others. */
  calls: number;
  /** Told when its calls have all ended, once it is being replaced (over its memory). */
  drained?: () => void;
  /** Its CPU time when last looked at, once past BACKGROUND_MS: what it spends after that is work left behind. */
  cpu?: { seconds: number; at: number };
}
