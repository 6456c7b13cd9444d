import { useEffect, useState } from 'preact/hooks';
import { api, type Operation } from './api';

/** How often a running operation's progress is read. */
const PROGRESS_MS = 1000;

/** An RFC 3339 time from a datetime-local field's value (the browser's zone), or nothing if empty. */
const isoOf = (local: string): string | undefined => (local ? new Date(local).toISOString() : undefined);

/** A background operation's progress, read until it ends. */
export function OperationProgress({ id }: { id: string }) {
  const [operation, setOperation] = useState<Operation>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = () =>
      api<Operation>('GET', `/v1/operations/${encodeURIComponent(id)}`).then(
        (found) => (setOperation(found), found.status === 'running' && (timer = setTimeout(read, PROGRESS_MS))),
        (err: Error) => setError(err.message),
      );
    void read();
    return () => clearTimeout(timer);
  }, [id]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!operation) return <p role="status">Starting…</p>;
  return (
    <div role="status" aria-live="polite">
      <progress max={Math.max(1, operation.total)} value={operation.done + operation.failed} aria-label="Replay progress" />
      <p>
        Operation {operation.id}: {operation.status}, {operation.done} of {operation.total} replayed{operation.failed ? `, ${operation.failed} no longer in the log` : ''}.
      </p>
    </div>
  );
}

/**
 * Replays an installation's failed deliveries in a time range: the count first (a dry
 * run), then, once confirmed, the background operation and its progress.
 */
export function BulkReplay({ installation }: { installation: string }) {
  const [range, setRange] = useState({ since: '', until: '' });
  const [count, setCount] = useState<number>();
  const [operation, setOperation] = useState<string>();
  const [error, setError] = useState<string>();
  const request = (dryRun: boolean) => ({ ...(dryRun && { dryRun }), installation, status: 'failed', since: isoOf(range.since), until: isoOf(range.until) });
  const countThem = async (event: Event) => {
    event.preventDefault();
    setOperation(undefined);
    try {
      setCount((await api<{ count: number }>('POST', '/v1/deliveries/replay', request(true))).count);
      setError(undefined);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const confirm = async () => {
    try {
      setOperation((await api<{ operation: string }>('POST', '/v1/deliveries/replay', request(false))).operation);
      setCount(undefined);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const field = (name: 'since' | 'until') => ({ type: 'datetime-local', name, value: range[name], onInput: (e: Event) => (setRange({ ...range, [name]: (e.currentTarget as HTMLInputElement).value }), setCount(undefined)) });
  return (
    <section aria-labelledby="bulk-title">
      <h2 id="bulk-title">Replay failed deliveries</h2>
      <form class="filters" onSubmit={countThem}>
        <label>
          From
          <input {...field('since')} />
        </label>
        <label>
          Until
          <input {...field('until')} />
        </label>
        <button type="submit" class="secondary">
          Count failed deliveries
        </button>
      </form>
      {count !== undefined && (
        <div class="notice" role="status">
          <p>
            {count} failed {count === 1 ? 'delivery' : 'deliveries'} in this range will be replayed (once per event).
          </p>
          {count > 0 && (
            <button type="button" onClick={confirm}>
              Replay {count}
            </button>
          )}
        </div>
      )}
      {operation && <OperationProgress id={operation} />}
      {error && <p class="error" role="alert">{error}</p>}
    </section>
  );
}
