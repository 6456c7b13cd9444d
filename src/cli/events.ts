import { readFile } from 'node:fs/promises';
import type { ApiClient } from './api-client';
import { CliError } from './api-client';
import { show, table, type Output } from './format';
import { newEventId } from '../ids';

/** What /v1/events/batch takes at most. */
const BATCH_EVENTS = 500;
/** Waits before the retries of what is not known to be accepted (503, 429, no answer). */
const RETRY_WAITS_MS = [1000, 2000, 4000];

type Refusal = { error: string; message: string; details?: { field: string; message: string }[] };
type Result = { eventId: string; deliveries: string[] } | Refusal;
/** One row of the answer: the event's id (given here if it had none) and what became of it. */
type Row = { eventId?: string } & Result;

const notKnownAccepted = (err: unknown) => err instanceof CliError && (err.status === 503 || err.status === 429 || err.status === 0);
const isUnavailable = (result: Result) => 'error' in result && result.error === 'unavailable';

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
    parsed = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${name} is not JSON: ${(err as Error).message}`, 'an event object, an array of them, or {"events": [...]}', 2);
  }
  if (Array.isArray(parsed)) return { events: parsed, single: false };
  const wrapped = (parsed as { events?: unknown } | null)?.events;
  if (Array.isArray(wrapped)) return { events: wrapped, single: false };
  return { events: [parsed], single: true };
}

/**
 * `platform events send`: each event without an eventId is given one here, before the
 * first try, so that what is sent again after an answer that never came (503, 429, no
 * answer: "not known to be accepted") is the same event, delivered once. Up to 500 go in
 * one batch request; those of a batch the API could not take are sent again with their
 * ids; whatever is still not known to be accepted at the end is listed with its eventId,
 * to be sent again with it.
 */
export async function sendEvents(api: ApiClient, output: Output, file: string | undefined, wait: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms))): Promise<void> {
  const { events, single } = await readEvents(file);
  if (events.length === 0) throw new CliError('no events to send', undefined, 2);
  const identified = events.map((event) => (event && typeof event === 'object' && !Array.isArray(event) && !('eventId' in event) ? { ...event, eventId: newEventId() } : event));
  const idOf = (i: number) => (identified[i] as { eventId?: unknown } | null)?.eventId;
  const rows: Row[] = [];
  const settle = (i: number, result: Result) => (rows[i] = { ...(typeof idOf(i) === 'string' && { eventId: idOf(i) as string }), ...result });
  /** Sends the events at these indexes; answers those whose answer was "not known to be accepted". */
  const send = async (indexes: number[]): Promise<number[]> => {
    try {
      if (single) {
        settle(0, await api.request<Result>('POST', '/v1/events', identified[0]));
        return [];
      }
      const { results } = await api.request<{ results: Result[] }>('POST', '/v1/events/batch', { events: indexes.map((i) => identified[i]) });
      results.forEach((result, k) => settle(indexes[k]!, result));
      return indexes.filter((_, k) => isUnavailable(results[k]!));
    } catch (err) {
      if (!notKnownAccepted(err)) throw err;
      for (const i of indexes) settle(i, { error: 'unavailable', message: (err as Error).message });
      return indexes;
    }
  };
  for (let start = 0; start < identified.length; start += BATCH_EVENTS) {
    let pending = await send(identified.slice(start, start + BATCH_EVENTS).map((_, k) => start + k));
    for (const ms of RETRY_WAITS_MS) {
      if (pending.length === 0) break;
      await wait(ms);
      pending = await send(pending);
    }
  }
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
  const unsure = refused.filter(isUnavailable).length;
  throw new CliError(
    `${refused.length} of ${rows.length} events were not accepted${unsure ? ` (${unsure} not known to be: unavailable)` : ''}`,
    unsure ? 'send those again with the eventIds shown: one already accepted is answered again, never delivered twice' : 'fix them and send them again',
  );
}
