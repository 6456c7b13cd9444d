import { readFile } from 'node:fs/promises';
import type { ApiClient } from './api-client';
import { CliError } from './api-client';
import { show, table, type Output } from './format';
import { newEventId } from '../ids';

/** What /v1/events/batch takes at most: 500 events, and a body well under its 5 MB. */
const BATCH_EVENTS = 500;
const BATCH_BYTES = 4 * 1024 * 1024;
/** Waits before the retries of what is not known to be accepted. */
const RETRY_WAITS_MS = [1000, 2000, 4000];
/** Answers after which a request may or may not have been taken: no answer (0), a gateway's, too many requests, unavailable. */
const NOT_KNOWN_ACCEPTED = new Set([0, 429, 502, 503, 504]);

type Refusal = { error: string; message: string; details?: { field: string; message: string }[] };
type Result = { eventId: string; deliveries: string[] } | Refusal;
/** One row of the answer: the event's id (given here if it had none) and what became of it. */
type Row = { eventId?: string } & Result;

const isUnavailable = (result: Result) => 'error' in result && result.error === 'unavailable';
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Reads events: one object, an array, or `{events: [...]}`, from a file or (no file, or `-`) stdin. */
async function readEvents(file: string | undefined): Promise<{ events: unknown[]; single: boolean }> {
  const fromStdin = !file || file === '-';
  const name = fromStdin ? 'stdin' : file;
  if (fromStdin && process.stdin.isTTY) throw new CliError('no events given', 'platform events send file.json, or pipe the JSON in', 2);
  let text = '';
  try {
    // stdin as a stream: a pipe whose writer is slower than node is read to its end, not EAGAIN.
    if (fromStdin) for await (const chunk of process.stdin) text += chunk;
    else text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'platform events send [file.json | -]', 2);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new CliError(`${name} is not JSON: ${(err as Error).message}`, 'an event object, an array of them, or {"events": [...]}', 2);
  }
  if (Array.isArray(parsed)) return { events: parsed, single: false };
  if (Array.isArray((parsed as { events?: unknown } | null)?.events)) return { events: (parsed as { events: unknown[] }).events, single: false };
  if (!isObject(parsed)) throw new CliError(`${name} holds ${JSON.stringify(parsed)}, not an event`, 'an event object, an array of them, or {"events": [...]}', 2);
  return { events: [parsed], single: true };
}

/** Indexes of the events in requests of at most BATCH_EVENTS events and BATCH_BYTES bytes. */
function batches(events: unknown[]): number[][] {
  const out: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  events.forEach((event, i) => {
    const size = Buffer.byteLength(JSON.stringify(event) ?? 'null') + 1;
    if (current.length && (current.length === BATCH_EVENTS || bytes + size > BATCH_BYTES)) {
      out.push(current);
      [current, bytes] = [[], 0];
    }
    current.push(i);
    bytes += size;
  });
  if (current.length) out.push(current);
  return out;
}

/** Says on stderr which events share an eventId with an earlier, different one: only the first is delivered. */
function warnOfReusedIds(events: unknown[]): void {
  const first = new Map<string, number>();
  events.forEach((event, i) => {
    if (!isObject(event) || typeof event.eventId !== 'string') return;
    const earlier = first.get(event.eventId);
    if (earlier === undefined) first.set(event.eventId, i);
    else if (JSON.stringify(events[earlier]) !== JSON.stringify(event)) process.stderr.write(`warning: events ${earlier} and ${i} share eventId ${event.eventId}: the second is answered as the first, not delivered\n`);
  });
}

/**
 * `platform events send`: each event without an eventId (or with an empty one) is given one
 * here, before the first try, so that what is sent again after an answer that may not have
 * been taken (no answer, 429, 502-504) is the same event, delivered once. Batches go one at
 * a time; a batch's events answered `unavailable` are sent again alone, with their ids.
 * Whatever happens (a refusal, the last retry spent, Ctrl-C), every event is listed with its
 * eventId and what became of it: those not known to be accepted, or never sent, can be sent
 * again with their ids.
 */
export async function sendEvents(api: ApiClient, output: Output, file: string | undefined, wait: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms))): Promise<void> {
  const { events, single } = await readEvents(file);
  if (events.length === 0) throw new CliError('no events to send', undefined, 2);
  const identified = events.map((event) => (isObject(event) && (event.eventId === undefined || event.eventId === null || event.eventId === '') ? { ...event, eventId: newEventId() } : event));
  warnOfReusedIds(identified);
  const rows: Row[] = [];
  const settle = (i: number, result: Result) => {
    const eventId = (identified[i] as { eventId?: unknown } | null)?.eventId;
    rows[i] = { ...(typeof eventId === 'string' && { eventId }), ...result };
  };
  // Ctrl-C: the request under way is answered, then nothing more is sent, and all is listed.
  let interrupted = false;
  const interrupt = () => (interrupted = true);
  process.once('SIGINT', interrupt);
  /** A batch refused whole: nothing after it is sent. */
  let stopped: Error | undefined;
  /** Sends the events at these indexes; answers those not known to be accepted. */
  const send = async (indexes: number[]): Promise<number[]> => {
    try {
      if (single) settle(0, await api.request<Result>('POST', '/v1/events', identified[0]));
      else {
        const { results } = await api.request<{ results: Result[] }>('POST', '/v1/events/batch', { events: indexes.map((i) => identified[i]) });
        results.forEach((result, k) => settle(indexes[k]!, result));
      }
      return indexes.filter((i) => isUnavailable(rows[i]!));
    } catch (err) {
      const answer = err instanceof CliError ? err.answer : undefined;
      if (!answer) throw err;
      const unsure = NOT_KNOWN_ACCEPTED.has(answer.status);
      // One event refused by its own fault (400, 404, 409) says so; a batch refused whole (401, 413, 500) was not sent.
      for (const i of indexes) settle(i, { error: unsure ? 'unavailable' : single ? (answer.error ?? `http_${answer.status}`) : 'not_sent', message: (err as Error).message });
      if (!unsure && !single) stopped = err as Error;
      return unsure ? indexes : [];
    }
  };
  try {
    for (const batch of batches(identified)) {
      let pending = interrupted || stopped ? [] : await send(batch);
      for (const ms of RETRY_WAITS_MS) {
        if (pending.length === 0 || interrupted || stopped) break;
        await wait(ms);
        if (!interrupted) pending = await send(pending);
      }
    }
  } finally {
    process.off('SIGINT', interrupt);
  }
  for (let i = 0; i < identified.length; i++) if (!rows[i]) settle(i, { error: 'not_sent', message: stopped ? `an earlier batch was refused: ${stopped.message}` : 'interrupted' });
  show(output, single ? rows[0] : { results: rows }, () =>
    table(
      rows.map((row, i) => ({ i, row })),
      [
        { header: '#', value: ({ i }) => String(i) },
        { header: 'EVENT', value: ({ row }) => row.eventId ?? '-' },
        { header: 'RESULT', value: ({ row }) => ('deliveries' in row ? `${row.deliveries.length} deliveries` : `${row.error}: ${row.message}${(row.details ?? []).map((d) => ` (${d.field}: ${d.message})`).join('')}`) },
      ],
    ),
  );
  const refused = rows.filter((row) => 'error' in row);
  if (refused.length === 0) return;
  const again = refused.filter((row) => row.error === 'unavailable' || row.error === 'not_sent').length;
  throw new CliError(
    `${refused.length} of ${rows.length} events were not accepted${again ? ` (${again} unavailable or not sent)` : ''}${stopped ? `; sending stopped: ${stopped.message}` : interrupted ? '; interrupted' : ''}`,
    again ? 'send those marked unavailable or not_sent again with the eventIds shown: one already accepted is answered again, never delivered twice' : 'fix them and send them again',
  );
}
