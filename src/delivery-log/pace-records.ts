import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema';

/** Where an attempt of a throttled installation stands: send at `sendAt`, or ask again in `laterMs`. */
export type PaceSlot = { sendAt: number } | { laterMs: number };

/** After a receiver's 429, its installation goes at half its pace this long. */
const SLOWED_FOR_MS = 60_000;

/**
 * Send slots of installations with a `max_per_second`, shared by every worker through the
 * log's database: each attempt takes the next slot (`interval` after the one before) with
 * one atomic update, or, when the next is further out than `horizonMs`, takes none and is
 * asked for again then (the shard waits, durably, and no attempt is spent).
 */
export class PaceRecords {
  constructor(private readonly db: Kysely<Schema>) {}

  async reserve(installationId: string, intervalMs: number, horizonMs: number, now = Date.now()): Promise<PaceSlot> {
    // Whole microseconds, so that a pace whose interval is no whole number of milliseconds
    // holds (300/s went at 333/s, 3,000/s at 1,000/s); typed, as PostgreSQL takes an
    // untyped parameter in a CASE for text.
    const interval = Math.max(1, Math.round(intervalMs * 1000));
    const nowUs = now * 1000;
    const big = (value: number) => sql<number>`cast(${value} as bigint)`;
    await this.db.insertInto('installation_pace').values({ installation_id: installationId, next_at: now, next_at_us: nowUs, held_until: 0, slow_until: 0 }).onConflict((oc) => oc.column('installation_id').doNothing()).execute();
    const slowed = sql<boolean>`slow_until > ${big(now)}`;
    const step = sql<number>`case when ${slowed} then ${big(2 * interval)} else ${big(interval)} end`;
    const start = sql<number>`case when next_at_us > ${big(nowUs)} then next_at_us else ${big(nowUs)} end`;
    const taken = await this.db
      .updateTable('installation_pace')
      .set({ next_at_us: sql<number>`${start} + ${step}` })
      .where('installation_id', '=', installationId)
      .where('next_at_us', '<=', nowUs + horizonMs * 1000)
      .returning(['next_at_us', 'slow_until'])
      .executeTakeFirst();
    if (taken) return { sendAt: (Number(taken.next_at_us) - (Number(taken.slow_until) > now ? 2 * interval : interval)) / 1000 };
    const row = await this.db.selectFrom('installation_pace').select('next_at_us').where('installation_id', '=', installationId).executeTakeFirstOrThrow();
    return { laterMs: Math.max(1, Math.ceil((Number(row.next_at_us) - nowUs) / 1000 - horizonMs)) };
  }

  /** Until when a receiver's 429 holds the installation's sends, slots taken before it included (0: not held). */
  async heldUntil(installationId: string): Promise<number> {
    const row = await this.db.selectFrom('installation_pace').select('held_until').where('installation_id', '=', installationId).executeTakeFirst();
    return Number(row?.held_until ?? 0);
  }

  /** A receiver's 429: nothing is sent before `retryAfterMs` is over, and then at half the pace for a minute. */
  async slowDown(installationId: string, retryAfterMs: number, now = Date.now()): Promise<void> {
    const resume = Math.round(now + retryAfterMs);
    await this.db
      .updateTable('installation_pace')
      .set({ next_at_us: sql<number>`case when next_at_us > cast(${resume * 1000} as bigint) then next_at_us else cast(${resume * 1000} as bigint) end`, held_until: resume, slow_until: resume + SLOWED_FOR_MS })
      .where('installation_id', '=', installationId)
      .execute();
  }
}
