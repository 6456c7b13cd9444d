import { accessSync, constants } from 'node:fs';
import type { Logger } from './logger';

/** How long a stop may take before the process exits anyway (SIGTERM to exit within 10 s). */
export const STOP_DEADLINE_MS = 8_000;

const SETPRIV = '/usr/bin/setpriv';
const canTie = (() => {
  try {
    accessSync(SETPRIV, constants.X_OK);
    return process.platform === 'linux';
  } catch {
    return false;
  }
})();

/**
 * A child that dies with this process, however this process dies (SIGKILL included): on
 * Linux, util-linux's setpriv sets the child's parent-death signal to SIGKILL, then execs
 * it (same pid). Elsewhere the command is run as it is.
 */
export function tiedToParent(command: string, args: string[]): [string, string[]] {
  return canTie ? [SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
}

/**
 * A signal this soon after the first is the same one again, not a second: Ctrl-C under
 * `npm start` reaches node from the terminal and once more forwarded by npm.
 */
const SAME_SIGNAL_MS = 1000;

/**
 * Stops on SIGINT or SIGTERM: `stop` gets STOP_DEADLINE_MS, then the process exits
 * whatever is still waiting; a second signal (a second later or more) exits at once. Also
 * stops when this process is orphaned (its parent, `npm start` say, died), so that
 * nothing it owns lives on.
 */
function stopOnSignals(stop: () => Promise<void>, logger: Logger): void {
  let stoppingSince: number | undefined;
  const exit = (code: number) => process.exit(code);
  const begin = (why: string) => {
    if (stoppingSince !== undefined) {
      if (performance.now() - stoppingSince < SAME_SIGNAL_MS) return;
      logger.warn({ why }, 'stopping at once');
      exit(1);
    }
    stoppingSince = performance.now();
    logger.info({ why }, 'stopping');
    setTimeout(() => {
      logger.warn({ ms: STOP_DEADLINE_MS }, 'stop took too long; exiting anyway');
      exit(1);
    }, STOP_DEADLINE_MS).unref();
    stop().then(
      () => exit(0),
      (err: unknown) => {
        logger.error({ err }, 'stop failed');
        exit(1);
      },
    );
  };
  process.on('SIGINT', () => begin('SIGINT'));
  process.on('SIGTERM', () => begin('SIGTERM'));
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) begin('parent process died');
  }, 1000).unref();
}

/**
 * What a process has started, stopped last first: on a signal, during start-up too, or
 * after a start-up that failed. Once stopping, a start-up step that ends stops what it
 * started at once and goes no further (the stop path exits the process).
 */
export class StartedParts {
  private readonly parts: { name: string; stop: () => Promise<unknown> }[] = [];
  private readonly beginnings: (() => void)[] = [];
  private stopping?: Promise<void>;

  constructor(private readonly logger: Logger) {}

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /** Answers `part`, to be stopped with the rest; once stopping, stops it and never answers. */
  async add<T>(name: string, part: T, stop: (part: T) => Promise<unknown> | undefined): Promise<T> {
    if (this.stopping) {
      await this.stopOne(name, async () => stop(part));
      return new Promise<T>(() => undefined);
    }
    this.parts.push({ name, stop: async () => stop(part) });
    return part;
  }

  /**
   * `begin` runs as soon as the stop begins, before any part stops: the worker's drain,
   * whose time runs beside the API's own drain rather than after it (both within
   * STOP_DEADLINE_MS).
   */
  whenStopping(begin: () => void): void {
    if (this.stopping) begin();
    else this.beginnings.push(begin);
  }

  /** Stops every part, last started first; one that fails is logged and the others still stop. */
  stopAll(): Promise<void> {
    this.stopping ??= (async () => {
      for (const begin of this.beginnings) begin();
      for (const { name, stop } of this.parts.reverse()) await this.stopOne(name, stop);
    })();
    return this.stopping;
  }

  private async stopOne(name: string, stop: () => Promise<unknown>): Promise<void> {
    try {
      await stop();
    } catch (err) {
      this.logger.warn({ err, part: name }, 'stopping it failed; stopping the rest');
    }
  }
}

/** From its call on, signals stop what is added to the parts it answers (see runEntryPoint); `onStop` runs first. */
export type Heed = (logger: Logger, onStop?: () => void) => StartedParts;

/**
 * Runs an entry point (the embedded default, the API, the worker). `start` calls `heed`
 * once it has a logger: from then on SIGINT and SIGTERM stop what it has started (see
 * stopOnSignals), during start-up too (the Temporal runtime takes none). A start-up that
 * fails stops what it started, then exits 1 saying so after `failed`; one that fails
 * because a signal stopped what it needed is the stop's to end.
 */
export function runEntryPoint(failed: string, start: (heed: Heed) => Promise<void>): void {
  let started: StartedParts | undefined;
  const heed: Heed = (logger, onStop) => {
    const parts = new StartedParts(logger);
    started = parts;
    stopOnSignals(async () => {
      onStop?.();
      await parts.stopAll();
    }, logger);
    return parts;
  };
  start(heed).catch(async (err: unknown) => {
    if (started?.isStopping) return;
    process.stderr.write(`${failed}: ${err instanceof Error ? err.message : String(err)}\n`);
    await Promise.race([started?.stopAll(), new Promise((resolve) => setTimeout(resolve, STOP_DEADLINE_MS))]);
    process.exit(1);
  });
}
