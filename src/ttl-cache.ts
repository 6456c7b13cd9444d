/**
 * Memoizes an async lookup per key for a short time; concurrent callers share one
 * lookup in flight, and a failed lookup is not kept.
 */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: Promise<V>; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly load: (key: K) => Promise<V>,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: K): Promise<V> {
    const now = Date.now();
    const entry = this.entries.get(key);
    if (entry && entry.until > now) return entry.value;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    const value = this.load(key);
    this.entries.set(key, { value, until: now + this.ttlMs });
    value.catch(() => this.entries.delete(key));
    return value;
  }
}
