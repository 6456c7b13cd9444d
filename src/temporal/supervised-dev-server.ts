import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logger';
import { DevServerExitedError, startDevServer, type DevServer, type DevServerOptions } from './dev-server';

/** Waits before each restart of a dev server that died: doubling from half a second, at most 30 s. */
const restartDelayMs = (failures: number): number => Math.min(30_000, 500 * 2 ** failures);
/** Restarts failed in a row after which the process cannot recover by itself: /livez says so, for an orchestrator to restart it. */
const MAX_FAILED_RESTARTS = 5;
/** Tries of the first start. */
const STARTS = 5;

/** Whether the process can still recover by itself (/livez). */
export type Liveness = () => { ok: true } | { ok: false; reason: string };

/**
 * The embedded default's dev server, restarted with backoff when it dies (on the same
 * ports and SQLite file, so nothing is lost and the clients reconnect by themselves);
 * the API answers 503 meanwhile. After MAX_FAILED_RESTARTS failed restarts in a row it
 * keeps trying, every 30 s, but reports the process not alive.
 */
export class SupervisedDevServer implements DevServer {
  private current: DevServer;
  private stopping = false;
  private failedRestarts = 0;
  private readonly settings: DevServerOptions;

  private constructor(first: DevServer, options: DevServerOptions, private readonly logger: Logger) {
    this.current = first;
    // The same port again on a restart, even when the first was any free one.
    this.settings = { ...options, port: Number(first.address.split(':').at(-1)) };
    void this.watch(first);
  }

  /**
   * The first start is tried STARTS times (over about 8 s) when the process exits before serving: on a busy
   * machine a port the CLI picks for itself (its internal services') can be taken between
   * its pick and its bind, and the CLI panics.
   */
  static async start(options: DevServerOptions, logger: Logger): Promise<SupervisedDevServer> {
    for (let attempt = 1; ; attempt++) {
      try {
        return new SupervisedDevServer(await startDevServer(options), options, logger);
      } catch (err) {
        if (!(err instanceof DevServerExitedError) || attempt >= STARTS) throw err;
        logger.warn({ err: err.message, attempt }, 'the Temporal dev server exited before serving; starting it again');
        await sleep(restartDelayMs(attempt - 1));
      }
    }
  }

  get address(): string {
    return this.current.address;
  }

  get pid(): number | undefined {
    return this.current.pid;
  }

  get uiUrl(): string | undefined {
    return this.current.uiUrl;
  }

  get exited(): Promise<void> {
    return this.current.exited;
  }

  readonly liveness: Liveness = () =>
    this.failedRestarts < MAX_FAILED_RESTARTS ? { ok: true } : { ok: false, reason: `the Temporal dev server died and ${this.failedRestarts} restarts in a row failed` };

  async stop(): Promise<void> {
    this.stopping = true;
    await this.current.stop();
  }

  private async watch(server: DevServer): Promise<void> {
    await server.exited;
    if (this.stopping) return;
    this.logger.error({ address: this.address }, 'the Temporal dev server stopped; restarting it');
    while (!this.stopping) {
      await sleep(restartDelayMs(this.failedRestarts));
      if (this.stopping) return;
      try {
        const restarted = await startDevServer(this.settings);
        this.current = restarted;
        if (this.stopping) return void (await restarted.stop());
        this.failedRestarts = 0;
        this.logger.info({ address: this.address, pid: restarted.pid }, 'the Temporal dev server is back');
        return void this.watch(restarted);
      } catch (err) {
        this.failedRestarts += 1;
        this.logger.error({ err: (err as Error).message, failedRestarts: this.failedRestarts }, 'restarting the Temporal dev server failed; trying again');
      }
    }
  }
}
