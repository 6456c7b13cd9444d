import { readFileSync } from 'node:fs';
import type { ApiClient } from './api-client';
import { CliError } from './api-client';
import { show, type Output } from './deliveries';
import { table } from './format';
import { newEventId } from '../ids';

/** What /v1/events/batch takes at most. */
const BATCH_EVENTS = 500;
/** Waits before the retries of what is not known to be accepted (503, 429, no answer). */
const RETRY_WAITS_MS = [1000, 2000, 4000];

type Result = { eventId: string; deliveries: string[] } | { error: string; message: string; details?: { field: string; message: string }[] };

const retryable = (err: unknown) => err instanceof CliError && (err.status === 503 || err.status === 429 || err.status === 0);

/** Reads events: one object, an array, or `{events: [...]}`, from a file or (no file, or `-`) stdin. */
function readEvents(file: string | undefined): { events: unknown[]; single: boolean } {
  const name = !file || file === '-' ? 'stdin' : file;
  if (name === 'stdin' && process.stdin.isTTY) throw new CliError('no events given', 'platform events send file.json, or pipe the JSON in', 2);
  let text: string;
  try {
    text = readFileSync(name === 'stdin' ? 0 : name, 'utf8');
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
 * first try, so that a retry of an answer that never came (503, 429, no answer: "not known
 * to be accepted") is the same event, delivered once. Up to 500 go in one batch request.
 */
export async function sendEvents(api: ApiClient, output: Output, file: string | undefined, wait: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms))): Promise<void> {
  const { events, single } = readEvents(file);
  if (events.length === 0) throw new CliError('no events to send', undefined, 2);
  const identified = events.map((event) => (event && typeof event === 'object' && !Array.isArray(event) && !('eventId' in event) ? { ...event, eventId: newEventId() } : event));
  const withRetries = async <T>(call: () => Promise<T>): Promise<T> => {
    for (let retry = 0; ; retry++) {
      try {
        return await call();
      } catch (err) {
        if (!retryable(err) || retry === RETRY_WAITS_MS.length) throw err;
        await wait(RETRY_WAITS_MS[retry]!);
      }
    }
  };
  const results: Result[] = [];
  if (single) results.push(await withRetries(() => api.request<Result>('POST', '/v1/events', identified[0])));
  for (let i = 0; !single && i < identified.length; i += BATCH_EVENTS) {
    const { results: part } = await withRetries(() => api.request<{ results: Result[] }>('POST', '/v1/events/batch', { events: identified.slice(i, i + BATCH_EVENTS) }));
    results.push(...part);
  }
  show(output, single ? results[0] : { results }, () =>
    table(
      results.map((result, i) => ({ i, result })),
      [
        { header: '#', value: ({ i }) => String(i) },
        { header: 'EVENT', value: ({ result }) => ('eventId' in result ? result.eventId : '-') },
        { header: 'RESULT', value: ({ result }) => ('eventId' in result ? `${result.deliveries.length} deliveries` : `${result.error}: ${result.message}${(result.details ?? []).map((d) => ` (${d.field}: ${d.message})`).join('')}`) },
      ],
    ),
  );
  const refused = results.filter((result) => 'error' in result).length;
  if (refused) throw new CliError(`${refused} of ${results.length} events were not accepted`, 'fix them and send them again: an accepted eventId sent again is answered, not delivered twice');
}
