import type { FailingKind } from '../webhooks/schedule';

/** How often, at most, the log is asked which receivers are failing. */
const READ_EVERY_MS = 1000;

/**
 * Which installations' receivers failed every attempt of their last batch, as the log said
 * at most a second ago: hand-overs carry it to shards of later epochs (see ShardItem's
 * `failing`). A hint, not a rule: asking never waits for the log (the last answer is
 * given, a fresh read starts behind it), and a failed read keeps the last answer.
 */
export class FailingReceivers {
  private known = new Map<string, FailingKind>();
  private readAt = -Infinity;
  private reading = false;

  constructor(private readonly read: () => Promise<Map<string, FailingKind>>) {}

  kindOf(installationId: string): FailingKind | undefined {
    this.refresh();
    return this.known.get(installationId);
  }

  private refresh(): void {
    const now = Date.now();
    if (this.reading || now - this.readAt < READ_EVERY_MS) return;
    this.readAt = now;
    this.reading = true;
    this.read().then(
      (known) => (this.known = known),
      () => undefined,
    ).finally(() => (this.reading = false));
  }
}
