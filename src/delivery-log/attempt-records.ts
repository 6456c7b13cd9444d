import { sql, type Kysely } from 'kysely';
import type { Encryption } from '../encryption';
import type { DeliveriesTable, Schema } from './schema';
import { attemptOf, chunks, inLineOrder, PENDING_COLUMNS, pendingDelivery, type LinePlace, type PendingDelivery } from './rows';
import { recordReceiverStates, recordHealth, type HealthChange } from './receiver-health';
import type { ReceiverState } from '../webhooks/schedule';
import type { AttemptRecord, DeliveryOutcome, DeliveryToAttempt, StartedAttempt } from './types';

/** An attempt's key in recordStarted's answer. */
export const startedKey = (deliveryId: string, attempt: number): string => `${deliveryId}#${attempt}`;

type DeliveryChange = Partial<Pick<DeliveriesTable, 'status' | 'reason' | 'updated_at' | 'completed_at' | 'attempts' | 'url' | 'workflow_id' | 'run_id'>>;

/**
 * What a receiver answered, as text either database stores: PostgreSQL refuses NUL in text,
 * and one receiver's binary answer must not fail its whole batch's write (run again, its
 * deliveries would be POSTed again, ten times, then failed). NUL shows as U+FFFD.
 */
const storableText = (text: string | undefined): string | null => (text === undefined ? null : text.replaceAll('\u0000', '\uFFFD'));

/**
 * The attempt batches' side of the log: the deliveries to attempt with what earlier runs
 * recorded of them, attempts written as started before they go out, and outcomes.
 */
export class AttemptRecords {
  /** Installations known to have a health row in the log (see recordHealth). */
  private readonly healthRows = new Set<string>();
  /** What this process last wrote of receivers' states (`failing_now`, see recordReceiverStates). */
  private readonly receiverStatesWritten = new Map<string, { state: ReceiverState; at: number }>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly encryption: Encryption,
  ) {}

  /**
   * The pending deliveries of an attempt batch with their bodies, and the attempt asked for
   * when an earlier run of the batch recorded it (its count goes up in the same transaction,
   * so only then are the attempts read).
   */
  async toAttempt(entries: { id: string; attempt: number }[]): Promise<Map<string, DeliveryToAttempt>> {
    const asked = new Map(entries.map((entry) => [entry.id, entry.attempt]));
    const found = new Map<string, DeliveryToAttempt>();
    for (const part of chunks([...asked.keys()])) {
      const rows = await this.db.selectFrom('deliveries').select(['id', 'event_id', 'installation_id', 'event_type', 'attempts', 'body', 'created_at', 'updated_at', 'replay_of']).where('id', 'in', part).where('status', '=', 'pending').execute();
      for (const row of rows) {
        // Never attempted, changed since its record: released from a hold (see releaseHeld, releaseOldestHeld).
        const released = row.attempts === 0 && Number(row.updated_at) !== Number(row.created_at);
        found.set(row.id, { id: row.id, eventId: row.event_id, installationId: row.installation_id, eventType: row.event_type, body: this.encryption.open(row.body), createdAt: Number(row.created_at), interruptedBefore: 0, ...(row.replay_of !== null && { replayOf: row.replay_of }), ...(released && { releasedAt: Number(row.updated_at) }) });
      }
      const rerun = rows.filter((row) => row.attempts >= asked.get(row.id)!).map((row) => row.id);
      for (const record of rerun.length ? await this.db.selectFrom('attempts').selectAll().where('delivery_id', 'in', rerun).execute() : []) {
        if (record.attempt === asked.get(record.delivery_id)) found.get(record.delivery_id)!.recorded = attemptOf(record);
      }
      const retried = rows.filter((row) => row.attempts > 0).map((row) => row.id);
      for (const earlier of retried.length ? await this.db.selectFrom('attempts').select(['delivery_id', 'attempt']).where('delivery_id', 'in', retried).where('error', '=', 'interrupted').execute() : []) {
        if (earlier.attempt < asked.get(earlier.delivery_id)!) found.get(earlier.delivery_id)!.interruptedBefore += 1;
      }
      // Started and not recorded: by a run that died (its answer unknown, it is not sent again), or one still making it.
      // None pending (a rerun of a batch whose deliveries all ended): no `in ()`, which PostgreSQL refuses (it failed such a batch for good in the topology test).
      for (const started of rows.length ? await this.db.selectFrom('attempts_in_flight').selectAll().where('delivery_id', 'in', rows.map((row) => row.id)).execute() : []) {
        const delivery = found.get(started.delivery_id)!;
        if (started.attempt === asked.get(started.delivery_id) && !delivery.recorded) delivery.interrupted = { deliveryId: started.delivery_id, attempt: started.attempt, startedAt: new Date(Number(started.started_at)).toISOString(), url: started.url, workflowId: started.workflow_id };
      }
    }
    return found;
  }

  /**
   * An installation's pending deliveries in its line's order (see inLineOrder), from after
   * `after` and before `before` (an ordered installation's line), with the attempts each has
   * had: one range of the pending-line index.
   */
  async pendingInOrder(installationId: string, limit: number, after?: LinePlace, before?: LinePlace): Promise<(PendingDelivery & LinePlace & { attempts: number })[]> {
    const place = (p: LinePlace) => [p.lineNo, p.createdAt, p.seq, p.id] as const;
    const rows = await this.db
      .selectFrom('deliveries')
      .select([...PENDING_COLUMNS, 'attempts', 'line_no', 'seq'])
      .where('installation_id', '=', installationId)
      .where('status', '=', 'pending')
      .$if(after !== undefined, (q) => q.where((eb) => eb(eb.refTuple('line_no', 'created_at', 'seq', 'id'), '>', eb.tuple(...place(after!)))))
      .$if(before !== undefined, (q) => q.where((eb) => eb(eb.refTuple('line_no', 'created_at', 'seq', 'id'), '<', eb.tuple(...place(before!)))))
      .$call(inLineOrder)
      .limit(limit)
      .execute();
    return rows.map((row) => ({ ...pendingDelivery(row), attempts: row.attempts, lineNo: Number(row.line_no), seq: Number(row.seq) }));
  }

  /**
   * Where the installation's oldest held delivery stands in its line: an ordered line sends
   * nothing after it until it is released (a resume's operation) or dropped, so that events
   * recorded after a resume do not go before those held.
   */
  async oldestHeld(installationId: string): Promise<LinePlace | undefined> {
    const row = await this.db.selectFrom('deliveries').select(['line_no', 'created_at', 'seq', 'id']).where('installation_id', '=', installationId).where('status', '=', 'held').$call(inLineOrder).limit(1).executeTakeFirst();
    return row && { lineNo: Number(row.line_no), createdAt: Number(row.created_at), seq: Number(row.seq), id: row.id };
  }

  /** Attempts written as started that were not made after all (no room for integration code): the same attempt is made later. */
  async forgetStarted(attempts: Pick<StartedAttempt, 'deliveryId' | 'attempt'>[]): Promise<void> {
    for (const { deliveryId, attempt } of attempts) await this.db.deleteFrom('attempts_in_flight').where('delivery_id', '=', deliveryId).where('attempt', '=', attempt).execute();
  }

  /**
   * Attempts about to go out, written first: a worker that dies before recording their
   * answers leaves them for the next run to find (an attempt started and not recorded).
   * The write is the claim: answers the keys (`deliveryId#attempt`) written here. Refused:
   * an attempt another run wrote first, recorded or not (two runs never send the same
   * attempt; a recorded attempt keeps its claim, see recordWrites), and one whose delivery
   * has since ended or counted that attempt (an ordered line reads its next delivery a
   * whole POST ahead).
   */
  async recordStarted(attempts: StartedAttempt[], run: { workflowId: string; runId: string }): Promise<Set<string>> {
    const claimed = new Set<string>();
    for (const part of chunks(attempts)) {
      // Typed in the values list: PostgreSQL takes untyped parameters there for text.
      const claims = sql.join(part.map((started) => sql`(${started.deliveryId}, cast(${started.attempt} as integer), cast(${Date.parse(started.startedAt)} as bigint), ${started.url})`));
      // The select's `where` also settles SQLite's parse of an upsert after a select.
      const written = await sql<{ delivery_id: string; attempt: number }>`
        with claims (delivery_id, attempt, started_at, url) as (values ${claims})
        insert into attempts_in_flight (delivery_id, attempt, started_at, url, workflow_id, run_id)
        select claims.delivery_id, claims.attempt, claims.started_at, claims.url, ${run.workflowId}, ${run.runId}
        from claims join deliveries on deliveries.id = claims.delivery_id
        where deliveries.status = 'pending' and deliveries.attempts < claims.attempt
        on conflict (delivery_id, attempt) do nothing
        returning delivery_id, attempt`.execute(this.db);
      for (const row of written.rows) claimed.add(startedKey(row.delivery_id, Number(row.attempt)));
    }
    return claimed;
  }

  /**
   * Which of these delivery ids are not in the log at all. A quarantined one (recorded for
   * the wrong organization, see migration 0004) is known, not lost: never attempted, not absent.
   */
  async absent(ids: string[]): Promise<string[]> {
    let missing = ids;
    for (const table of ['deliveries', 'quarantined_deliveries'] as const) {
      if (missing.length === 0) break;
      const present = new Set<string>();
      for (const part of chunks(missing)) for (const row of await this.db.selectFrom(table).select('id').where('id', 'in', part).execute()) present.add(row.id);
      missing = missing.filter((id) => !present.has(id));
    }
    return missing;
  }

  /** Writes one batch's outcomes (see recordWrites). */
  recordOutcomes(outcomes: DeliveryOutcome[], run: { workflowId: string; runId: string }, now = Date.now()): Promise<HealthChange[]> {
    return this.recordWrites([{ outcomes, run }], now);
  }

  /**
   * Writes attempt batches' outcomes, attempts and states, in one transaction (a commit is
   * a tenth of a millisecond to a millisecond on SQLite, whatever it holds), then the
   * receivers' health; answers where the installations with failures in them stand.
   */
  async recordWrites(writes: { outcomes: DeliveryOutcome[]; run: { workflowId: string; runId: string } }[], now = Date.now()): Promise<HealthChange[]> {
    if (!writes.some((write) => write.outcomes.length)) return [];
    const finished = await this.db.transaction().execute(async (trx) => {
      const attempts = writes.flatMap(({ outcomes, run }) => outcomes.filter((outcome) => outcome.attempt).map(({ id, attempt }) => this.attemptRow(id, attempt!, run)));
      for (const part of chunks(attempts)) {
        await trx
          .insertInto('attempts')
          .values(part)
          .onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing())
          .execute();
        // Recorded: the claims of its earlier attempts go (a first attempt has none). Its own
        // stays (a delivery's last claim, until its purge): a late claim of the same attempt
        // then meets it, whatever it read. On PostgreSQL a claim that read the delivery
        // before this commits would otherwise find no row once it does, and send it again.
        const retries = new Map<number, string[]>();
        for (const row of part) {
          if (row.attempt === 1) continue;
          if (!retries.has(row.attempt)) retries.set(row.attempt, []);
          retries.get(row.attempt)!.push(row.delivery_id);
        }
        for (const [attempt, ids] of retries) await trx.deleteFrom('attempts_in_flight').where('delivery_id', 'in', ids).where('attempt', '<', attempt).execute();
      }
      // One statement per distinct change: a batch of one installation mostly shares one.
      const groups = new Map<string, { change: DeliveryChange; ids: string[] }>();
      for (const { outcomes, run } of writes) {
        for (const outcome of outcomes) {
          const change = this.changeOf(outcome, run, now);
          const key = JSON.stringify(change);
          const group = groups.get(key);
          if (group) group.ids.push(outcome.id);
          else groups.set(key, { change, ids: [outcome.id] });
        }
      }
      /** Deliveries this write finished, with their installations and when they were recorded. */
      const finishedNow = new Map<string, { installationId: string; createdAt: number }>();
      for (const { change, ids } of groups.values()) {
        for (const part of chunks(ids)) {
          let update = trx
            .updateTable('deliveries')
            .set(change)
            .where('id', 'in', part)
            // A finished delivery never changes again, whoever writes late.
            .where('status', '=', 'pending');
          // Nor does its count go back (a batch run again writes what it had recorded), but a
          // final outcome of the attempt counted last still ends the delivery.
          const attempt = change.attempts;
          if (attempt !== undefined) update = update.where((eb) => (change.status === 'pending' ? eb('attempts', '<', attempt) : eb('attempts', '<=', attempt)));
          if (change.status === 'pending') await update.execute();
          else for (const row of await update.returning(['id', 'installation_id', 'created_at']).execute()) finishedNow.set(row.id, { installationId: row.installation_id, createdAt: Number(row.created_at) });
        }
      }
      return writes.flatMap(({ outcomes }) => outcomes.filter((outcome) => finishedNow.has(outcome.id)).map((outcome) => ({ ...finishedNow.get(outcome.id)!, outcome })));
    });
    return recordHealth(this.db, this.healthRows, finished, now);
  }

  /** Where an attempt batch left its installations' receivers: failing (how), prompt, or answering (null); answers those that answer again after failing. */
  async noteReceivers(states: Map<string, ReceiverState>, now = Date.now()): Promise<string[]> {
    return recordReceiverStates(this.db, this.receiverStatesWritten, states, now);
  }

  private changeOf(outcome: DeliveryOutcome, run: { workflowId: string; runId: string }, now: number): DeliveryChange {
    const done = outcome.status !== 'pending';
    return {
      status: outcome.status,
      reason: outcome.reason ?? null,
      updated_at: now,
      completed_at: done ? now : null,
      ...(outcome.attempt && { attempts: outcome.attempt.attempt, url: outcome.attempt.url, workflow_id: run.workflowId, run_id: run.runId }),
    };
  }

  private attemptRow(deliveryId: string, attempt: AttemptRecord, run: { workflowId: string; runId: string }) {
    return {
      delivery_id: deliveryId,
      attempt: attempt.attempt,
      started_at: Date.parse(attempt.startedAt),
      duration_ms: attempt.durationMs,
      url: attempt.url,
      status_code: attempt.statusCode ?? null,
      error: attempt.error ?? null,
      error_message: storableText(attempt.errorMessage),
      response_body: storableText(attempt.responseBody),
      next_delay_ms: attempt.nextDelayMs ?? null,
      workflow_id: run.workflowId,
      run_id: run.runId,
    };
  }
}
