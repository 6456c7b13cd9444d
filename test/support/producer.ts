import { performance } from 'node:perf_hooks';

export interface SentEvent {
  /** performance.now() of its first request. */
  firstSentAt: number;
  acceptedAt?: number;
  deliveries?: string[];
}

/**
 * A client that emits events at a steady rate to the API processes in rotation (a load
 * balancer's view: a process being stopped is taken out first), each sent with its eventId
 * and sent again (to the next process) until answered 202, waiting what Retry-After says.
 */
export class SteadyProducer {
  readonly events = new Map<string, SentEvent>();
  /** Answers by status; `503 without Retry-After` counted apart. */
  readonly answers = new Map<string, number>();
  /** Requests that got no answer (connection refused or reset). */
  unanswered = 0;
  private turn = 0;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    /** The API URLs in rotation now. */
    private readonly rotation: () => string[],
    private readonly token: string,
    private readonly event: (eventId: string) => Record<string, unknown>,
  ) {}

  /** `perSecond` events for `durationMs` (and while `more()`), ids `${prefix}_${n}`; settles once each is accepted. */
  async run(prefix: string, perSecond: number, durationMs: number, more: () => boolean = () => false): Promise<void> {
    const sends: Promise<void>[] = [];
    const started = performance.now();
    let n = 0;
    // Every 50 ms, what the rate owes by then: steady whatever a tick's delay.
    while (performance.now() - started < durationMs || more()) {
      const owed = Math.floor(((performance.now() - started) / 1000) * perSecond);
      for (; n < owed; n++) sends.push(this.send(`evt_${prefix}_${n}`));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await Promise.all(sends);
  }

  private async send(eventId: string): Promise<void> {
    const sent: SentEvent = { firstSentAt: performance.now() };
    this.events.set(eventId, sent);
    for (let tries = 1; ; tries++) {
      // At most MAX_IN_FLIGHT requests at once, as a real producer's pool: a stall (the server
      // away) queues events here rather than opening a connection each.
      await this.slot();
      const targets = this.rotation();
      const target = targets[this.turn++ % targets.length]!;
      const answer = await fetch(`${target}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(this.event(eventId)),
      })
        .catch(() => undefined)
        .finally(() => this.release());
      if (!answer) {
        this.unanswered += 1;
        await pause(500);
        continue;
      }
      const retryAfter = answer.headers.get('retry-after');
      const key = answer.status === 503 && !retryAfter ? '503 without Retry-After' : String(answer.status);
      this.answers.set(key, (this.answers.get(key) ?? 0) + 1);
      const body = (await answer.json().catch(() => ({}))) as { deliveries?: string[] };
      if (answer.status === 202) {
        sent.acceptedAt = performance.now();
        sent.deliveries = body.deliveries;
        return;
      }
      // Retry-After (1 s) or 1 s, longer as tries go on: a client's backoff, not a flood.
      await pause(Math.min(Number(retryAfter ?? 1) * 1000 * Math.min(tries, 5), 5000));
    }
  }

  private async slot(): Promise<void> {
    if (this.inFlight >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.inFlight += 1;
  }

  private release(): void {
    this.inFlight -= 1;
    this.waiting.shift()?.();
  }
}

const MAX_IN_FLIGHT = 128;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
