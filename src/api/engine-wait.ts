import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { CallsInFlight, engineHeardSince, withCallsCounted } from '../temporal/calls-in-flight';
import { unavailable } from './errors';

/**
 * How long a request waits on Temporal, its calls' retries included, before it is answered
 * 503. A member's write or read is safe to send again, but nobody retries it for them, and
 * on a busy machine an install (a workflow start and an update through a worker) took over
 * 1.5 s: it waits. Ingest and the health checks bound their own waits (RouteSpec.ownDeadline).
 */
export const REQUEST_ENGINE_WAIT_MS = 10_000;
/** A request that has waited on Temporal this long asks whether the engine is there at all... */
const PROBE_AFTER_MS = 500;
/**
 * ...and the frontend, which answers this call at once whenever it is up, gets this long
 * (a busy CI machine saw it take over 1 s: a second's silence is not enough to call it hung).
 */
const PROBE_MS = 2000;

/**
 * Runs a request under REQUEST_ENGINE_WAIT_MS, telling a busy engine from a hung one: once
 * the request has had a Temporal call in flight for PROBE_AFTER_MS, the frontend is asked a
 * cheap question (one question shared by every request waiting meanwhile). Silent past
 * PROBE_MS, the request is answered 503 then (within 3 s), as a stopped server's (whose
 * connections are refused) is; unless another call of this process had the server's
 * answer meanwhile (a busy server), which excuses one silent probe (503 within 5 s), or
 * this process itself stood still for much of the probe (a starved CPU: test processes
 * of a busy CI run were held 2-6 s), which says nothing of the engine. Time spent
 * elsewhere (integration code, the delivery log) never counts.
 */
export class EngineWait {
  private probe?: Promise<{ answered: boolean; heardMeanwhile: boolean; heldHere: boolean }>;

  constructor(private readonly client: Client) {}

  async run<R>(fn: () => Promise<R>): Promise<R> {
    const calls = new CallsInFlight();
    const call = withCallsCounted(calls, () => this.client.withDeadline(Date.now() + REQUEST_ENGINE_WAIT_MS, fn));
    let watch: NodeJS.Timeout | undefined;
    const gone = new Promise<never>((_, reject) => {
      let asking = false;
      // Another call's answer excuses a silent probe once; the next must be answered itself.
      let excused = false;
      watch = setInterval(() => {
        if (asking || calls.waitingSince === undefined || performance.now() - calls.waitingSince < PROBE_AFTER_MS) return;
        asking = true;
        void this.answers().then(({ answered, heardMeanwhile, heldHere }) => {
          asking = false;
          if (answered || heldHere) return;
          if (heardMeanwhile && !excused) excused = true;
          else reject(unavailable('Temporal did not answer in time; try again'));
        });
      }, PROBE_AFTER_MS / 2);
    });
    try {
      return await Promise.race([call, gone]);
    } finally {
      clearInterval(watch);
      // A request given up on ends by its deadline; how it fails then is nobody's concern.
      call.catch(() => undefined);
    }
  }

  /**
   * Whether the frontend answers within PROBE_MS, and if not, whether some other call of
   * the process was answered meanwhile (a busy server, not a hung one), and whether this
   * process's event loop was held for half the probe or more (its answer unread, not late).
   */
  private answers(): Promise<{ answered: boolean; heardMeanwhile: boolean; heldHere: boolean }> {
    if (this.probe) return this.probe;
    const asked = performance.now();
    const delay = monitorEventLoopDelay({ resolution: 20 });
    delay.enable();
    this.probe = this.client
      .withDeadline(Date.now() + PROBE_MS, () => this.client.workflowService.getSystemInfo({}))
      .then(
        () => ({ answered: true, heardMeanwhile: true, heldHere: false }),
        () => ({ answered: false, heardMeanwhile: engineHeardSince(asked), heldHere: delay.max / 1e6 >= PROBE_MS / 2 }),
      )
      .finally(() => {
        delay.disable();
        this.probe = undefined;
      });
    return this.probe;
  }
}
