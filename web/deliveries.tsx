import { useEffect, useState } from 'preact/hooks';
import { api, safeHref, type Delivery, type DeliverySummary, type Session } from './api';

const STATUSES = ['', 'pending', 'delivered', 'failed', 'skipped', 'held'];
/** How often the first page is read again: new deliveries appear without a reload. */
const REFRESH_MS = 3000;

interface Filters {
  org: string;
  installation: string;
  status: string;
  eventType: string;
  eventId: string;
  /** datetime-local values (the browser's zone), sent as RFC 3339. */
  since: string;
  until: string;
}

const queryOf = (filters: Filters, pageToken?: string) => {
  const times = { since: filters.since && new Date(filters.since).toISOString(), until: filters.until && new Date(filters.until).toISOString() };
  return new URLSearchParams(Object.entries({ ...filters, ...times, ...(pageToken && { pageToken }) }).filter(([, value]) => value !== '')).toString();
};

export function Status({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

/** Where a view's links go: the console's pages, or a portal link's (`/portal/<token>`), which shows one installation. */
export interface View {
  base: string;
  portal: boolean;
  go: (to: string) => void;
}

export function DeliveriesPage({ session, view }: { session?: Session; view: View }) {
  const { base, go } = view;
  // A link may carry filters (an installation's "its deliveries"); the member's first organization otherwise.
  const [filters, setFilters] = useState<Filters>(() => {
    const given = new URLSearchParams(location.search);
    const installation = given.get('installation') ?? '';
    return { org: given.get('org') ?? (installation ? '' : (session?.caller.orgs?.[0] ?? '')), installation, status: given.get('status') ?? '', eventType: given.get('eventType') ?? '', eventId: given.get('eventId') ?? '', since: '', until: '' };
  });
  const [applied, setApplied] = useState(filters);
  const [items, setItems] = useState<DeliverySummary[]>([]);
  const [next, setNext] = useState<string>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const page = await api<{ items: DeliverySummary[]; nextPageToken?: string }>('GET', `/v1/deliveries?${queryOf(applied)}`);
        if (stopped) return;
        // The first page again: what is new goes on top, what was paged in below stays.
        setItems((shown) => [...page.items, ...shown.filter((item) => !page.items.some((fresh) => fresh.id === item.id) && shown.indexOf(item) >= page.items.length)]);
        setNext((known) => known ?? page.nextPageToken);
        setError(undefined);
      } catch (err) {
        if (!stopped) setError((err as Error).message);
      }
    };
    setItems([]);
    setNext(undefined);
    void load();
    const timer = setInterval(load, REFRESH_MS);
    return () => ((stopped = true), clearInterval(timer));
  }, [applied]);

  const more = async () => {
    const page = await api<{ items: DeliverySummary[]; nextPageToken?: string }>('GET', `/v1/deliveries?${queryOf(applied, next)}`);
    setItems((shown) => [...shown, ...page.items.filter((item) => !shown.some((known) => known.id === item.id))]);
    setNext(page.nextPageToken);
  };
  const field = (name: keyof Filters) => ({ value: filters[name], onInput: (e: Event) => setFilters({ ...filters, [name]: (e.currentTarget as HTMLInputElement).value }) });

  return (
    <section aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries</h2>
      <form class="filters" onSubmit={(e) => (e.preventDefault(), setApplied(filters))}>
        {!view.portal && (
          <>
            <label>
              Organization
              <input name="org" {...field('org')} />
            </label>
            <label>
              Installation
              <input name="installation" {...field('installation')} />
            </label>
          </>
        )}
        <label>
          Status
          <select name="status" {...field('status')}>
            {STATUSES.map((status) => (
              <option value={status}>{status || 'any'}</option>
            ))}
          </select>
        </label>
        <label>
          Event type
          <input name="eventType" placeholder="space_content_updated" {...field('eventType')} />
        </label>
        <label>
          Event id
          <input name="eventId" {...field('eventId')} />
        </label>
        <label>
          Created from
          <input type="datetime-local" name="since" {...field('since')} />
        </label>
        <label>
          Created until
          <input type="datetime-local" name="until" {...field('until')} />
        </label>
        <button type="submit">Filter</button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden">Deliveries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Created</th>
              <th scope="col">Status</th>
              <th scope="col">Event</th>
              <th scope="col">Installation</th>
              <th scope="col">Attempts</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr key={item.id}>
                <td>
                  <a href={`${base}/deliveries/${encodeURIComponent(item.id)}`} onClick={(e) => (e.preventDefault(), go(`${base}/deliveries/${encodeURIComponent(item.id)}`))}>
                    {new Date(item.createdAt).toLocaleString()}
                  </a>
                </td>
                <td>
                  <Status status={item.status} />
                </td>
                <td>
                  {item.eventType}
                  <br />
                  <small>{item.eventId}</small>
                </td>
                <td>{item.installationId}</td>
                <td>{item.attemptCount ?? 0}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {items.length === 0 && !error && <p>No deliveries match.</p>}
      {next && (
        <div class="actions">
          <button type="button" class="secondary" onClick={more}>
            Older deliveries
          </button>
        </div>
      )}
    </section>
  );
}

export function DeliveryPage({ id, view }: { id: string; view: View }) {
  const { base, go } = view;
  const [delivery, setDelivery] = useState<Delivery>();
  const [error, setError] = useState<string>();
  const [replayed, setReplayed] = useState<string>();
  useEffect(() => {
    setDelivery(undefined);
    setReplayed(undefined);
    api<Delivery>('GET', `/v1/deliveries/${encodeURIComponent(id)}`).then(setDelivery, (err: Error) => setError(err.message));
  }, [id]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!delivery) return <p>Loading…</p>;
  const replay = async () => {
    try {
      const answer = await api<{ id: string }>('POST', `/v1/deliveries/${encodeURIComponent(id)}/replay`);
      setReplayed(answer.id);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <section aria-labelledby="delivery-title">
      <h2 id="delivery-title">Delivery {delivery.id}</h2>
      <dl>
        <dt>Status</dt>
        <dd>
          <Status status={delivery.status} />
          {(delivery.failureReason ?? delivery.heldReason) && ` (${delivery.failureReason ?? delivery.heldReason})`}
        </dd>
        <dt>Event</dt>
        <dd>
          {delivery.eventType} {delivery.eventId}
        </dd>
        <dt>Installation</dt>
        <dd>{delivery.installationId}</dd>
        <dt>URL</dt>
        <dd>{delivery.url ?? '—'}</dd>
        <dt>Created</dt>
        <dd>{new Date(delivery.createdAt).toLocaleString()}</dd>
      </dl>
      <div class="actions">
        {(delivery.status === 'failed' || delivery.status === 'delivered') && (
          <button type="button" onClick={replay}>
            Replay
          </button>
        )}
        {replayed && (
          <p class="notice" role="status">
            Replayed as{' '}
            <a href={`${base}/deliveries/${encodeURIComponent(replayed)}`} onClick={(e) => (e.preventDefault(), go(`${base}/deliveries/${encodeURIComponent(replayed)}`))}>
              {replayed}
            </a>
          </p>
        )}
      </div>
      <h3>Payload</h3>
      <pre aria-label="Payload">{delivery.payload}</pre>
      <h3>Attempts</h3>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
              <th scope="col">Outcome</th>
              <th scope="col">Next wait</th>
              <th scope="col">Response (first KiB)</th>
              <th scope="col">Workflow run</th>
            </tr>
          </thead>
          <tbody>
            {delivery.attempts.map((attempt) => (
              <tr key={attempt.attempt}>
                <td>{attempt.attempt}</td>
                <td>{new Date(attempt.startedAt).toLocaleString()}</td>
                <td>{attempt.durationMs} ms</td>
                <td>{attempt.statusCode ?? attempt.error}</td>
                <td>{attempt.nextDelayMs === undefined ? '—' : `${attempt.nextDelayMs} ms`}</td>
                <td>{attempt.responseBody || attempt.errorMessage ? <pre>{attempt.responseBody || attempt.errorMessage}</pre> : '—'}</td>
                <td>{safeHref(attempt.workflow?.url) ? <a href={safeHref(attempt.workflow?.url)}>{attempt.workflow!.workflowId}</a> : (attempt.workflow?.workflowId ?? '—')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
