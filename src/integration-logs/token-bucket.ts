/** `rate` tokens a second, up to `burst` saved; each line takes one. */
export class TokenBucket {
  private tokens: number;

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private at: number,
  ) {
    this.tokens = burst;
  }

  /** Takes up to `wanted` tokens; answers how many it got. */
  take(wanted: number, now: number): number {
    this.refill(now);
    const granted = Math.min(wanted, Math.floor(this.tokens));
    this.tokens -= granted;
    return granted;
  }

  isFull(now: number): boolean {
    this.refill(now);
    return this.tokens >= this.burst;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.at) / 1000) * this.rate);
    this.at = Math.max(this.at, now);
  }
}
