import { useEffect, useState } from 'preact/hooks';
import { api, installationPath, safeHref, type Health, type Installation, type Session } from './api';
import { HealthChart } from './health-chart';
import { BulkReplay, OperationProgress } from './operations';
import { SigningSecret } from './secret';
import { Status, type View } from './deliveries';

const WEBHOOK = 'webhook';
const percent = (rate: number | null) => (rate === null ? '—' : `${(rate * 100).toFixed(1)}%`);
const webhookUrl = (installation: Installation) => (typeof installation.configuration.webhook_url === 'string' ? installation.configuration.webhook_url : undefined);
const targetOf = ({ target }: Installation) => [target.org, target.space && `space ${target.space}`, target.site && `site ${target.site}`].filter(Boolean).join(' / ');

function useHealth(id: string, refresh = 0): [Health | undefined, string | undefined] {
  const [health, setHealth] = useState<Health>();
  const [error, setError] = useState<string>();
  useEffect(() => void api<Health>('GET', installationPath(id, '/health')).then(setHealth, (err: Error) => setError(err.message)), [id, refresh]);
  return [health, error];
}

function LastFailure({ failure }: { failure: Health['lastFailure'] }) {
  if (!failure) return <>none</>;
  return (
    <>
      {failure.statusCode ?? failure.error} at {new Date(failure.at).toLocaleString()}
    </>
  );
}

/** One row's health, read for it: what the list shows of each installation's last day. */
function HealthCells({ id }: { id: string }) {
  const [health] = useHealth(id);
  if (!health) return <td colSpan={3}>…</td>;
  const { last24h } = health;
  return (
    <>
      <td>
        {percent(last24h.successRate)}
        <br />
        <small>
          {last24h.delivered} delivered, {last24h.failed} failed, {last24h.pending} pending
        </small>
      </td>
      <td>{last24h.latencyMs ? `${last24h.latencyMs.p50} / ${last24h.latencyMs.p95} ms` : '—'}</td>
      <td>
        <LastFailure failure={health.lastFailure} />
      </td>
    </>
  );
}

export function InstallationsPage({ session, view }: { session: Session; view: View }) {
  const [org, setOrg] = useState(session.caller.orgs?.[0] ?? '');
  const [applied, setApplied] = useState(org);
  const [items, setItems] = useState<Installation[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    setItems(undefined);
    api<{ items: Installation[] }>('GET', `/v1/installations${applied ? `?org=${encodeURIComponent(applied)}` : ''}`).then((page) => (setItems(page.items), setError(undefined)), (err: Error) => setError(err.message));
  }, [applied]);
  const link = (id: string) => `${view.base}/installations/${encodeURIComponent(id)}`;
  return (
    <section aria-labelledby="installations-title">
      <h2 id="installations-title">Installations</h2>
      <form class="filters" onSubmit={(e) => (e.preventDefault(), setApplied(org))}>
        <label>
          Organization
          <input name="org" value={org} onInput={(e) => setOrg(e.currentTarget.value)} />
        </label>
        <button type="submit">Show</button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden">Installations with their health over the last 24 hours</caption>
          <thead>
            <tr>
              <th scope="col">Installation</th>
              <th scope="col">Status</th>
              <th scope="col">Target and URL</th>
              <th scope="col">Success (24 h)</th>
              <th scope="col">Latency p50 / p95</th>
              <th scope="col">Last failure</th>
            </tr>
          </thead>
          <tbody>
            {items?.map((installation) => (
              <tr key={installation.id}>
                <td>
                  <a href={link(installation.id)} onClick={(e) => (e.preventDefault(), view.go(link(installation.id)))}>
                    {installation.id}
                  </a>
                  <br />
                  <small>{installation.integration}</small>
                </td>
                <td>
                  <Status status={installation.status} />
                  {installation.pause && <small> ({installation.pause.reason})</small>}
                </td>
                <td>
                  {targetOf(installation)}
                  <br />
                  <small>{webhookUrl(installation) ?? ''}</small>
                </td>
                <HealthCells id={installation.id} />
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {items?.length === 0 && <p>No installations.</p>}
    </section>
  );
}

/** Pause, or resume: one paused by the platform holds events, which the resume delivers or drops, and may replay what failed meanwhile. */
function PauseResume({ installation, onChange }: { installation: Installation; onChange: (changed: Installation & { operation?: string }) => void }) {
  const [held, setHeld] = useState<'deliver' | 'drop'>('deliver');
  const [replayFailed, setReplayFailed] = useState(false);
  const [error, setError] = useState<string>();
  const byPlatform = installation.pause && installation.pause.reason !== 'member';
  const act = (path: string, body?: unknown) => api<Installation & { operation?: string }>('POST', installationPath(installation.id, path), body).then(onChange, (err: Error) => setError(err.message));
  if (installation.status !== 'paused') {
    return (
      <div class="actions">
        <button type="button" class="secondary" onClick={() => act('/pause')}>
          Pause
        </button>
        {error && <p class="error" role="alert">{error}</p>}
      </div>
    );
  }
  return (
    <form class="filters" onSubmit={(e) => (e.preventDefault(), act('/resume', byPlatform ? { held, ...(replayFailed && { replayFailed }) } : undefined))}>
      {byPlatform && (
        <>
          <label>
            Events held while paused
            <select name="held" value={held} onInput={(e) => setHeld(e.currentTarget.value as 'deliver' | 'drop')}>
              <option value="deliver">deliver them, in order</option>
              <option value="drop">drop them</option>
            </select>
          </label>
          <label class="inline">
            <input type="checkbox" name="replayFailed" checked={replayFailed} onInput={(e) => setReplayFailed(e.currentTarget.checked)} /> Replay what failed since the trouble began
          </label>
        </>
      )}
      <button type="submit">Resume</button>
      {error && <p class="error" role="alert">{error}</p>}
    </form>
  );
}

/** A delivery portal link for the installation's receiver. */
function PortalLink({ id }: { id: string }) {
  const [link, setLink] = useState<{ url: string; expiresAt: string }>();
  const [error, setError] = useState<string>();
  const make = () => api<{ url: string; expiresAt: string }>('POST', installationPath(id, '/portal-link'), {}).then(setLink, (err: Error) => setError(err.message));
  return (
    <section aria-labelledby="portal-title">
      <h2 id="portal-title">Delivery portal</h2>
      <div class="actions">
        <button type="button" class="secondary" onClick={make}>
          Make a portal link
        </button>
      </div>
      {link && (
        <p class="notice" role="status">
          Valid until {new Date(link.expiresAt).toLocaleString()}: <a href={safeHref(link.url)}>{link.url}</a>
        </p>
      )}
      {error && <p class="error" role="alert">{error}</p>}
    </section>
  );
}

export function InstallationPage({ id, view }: { id: string; view: View }) {
  const [installation, setInstallation] = useState<Installation & { operation?: string }>();
  const [error, setError] = useState<string>();
  const [refresh, setRefresh] = useState(0);
  const [health] = useHealth(id, refresh);
  useEffect(() => void api<Installation>('GET', installationPath(id)).then(setInstallation, (err: Error) => setError(err.message)), [id]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!installation) return <p>Loading…</p>;
  const deliveries = `${view.base}?installation=${encodeURIComponent(id)}`;
  const url = webhookUrl(installation);
  return (
    <>
      <section aria-labelledby="installation-title">
        <h2 id="installation-title">Installation {installation.id}</h2>
        <dl>
          <dt>Status</dt>
          <dd>
            <Status status={installation.status} />
            {installation.pause && ` (${installation.pause.reason}${installation.pause.troubleSince ? `, failing since ${new Date(installation.pause.troubleSince).toLocaleString()}` : ''})`}
          </dd>
          <dt>Integration</dt>
          <dd>
            {installation.integration}
            {installation.integration !== WEBHOOK && installation.version !== undefined && ` version ${installation.version}${installation.pinned ? ' (pinned)' : ''}`}
          </dd>
          <dt>Target</dt>
          <dd>{targetOf(installation)}</dd>
          {url && (
            <>
              <dt>URL</dt>
              <dd>{url}</dd>
            </>
          )}
        </dl>
        <PauseResume installation={installation} onChange={(changed) => (setInstallation(changed), setRefresh(refresh + 1))} />
        {installation.operation && <OperationProgress id={installation.operation} />}
        <p>
          <a href={deliveries} onClick={(e) => (e.preventDefault(), view.go(deliveries))}>
            Its deliveries
          </a>
        </p>
      </section>
      <section aria-labelledby="health-title">
        <h2 id="health-title">Health, last 24 hours</h2>
        {health ? (
          <>
            <dl>
              <dt>Success rate</dt>
              <dd>{percent(health.last24h.successRate)}</dd>
              <dt>Deliveries</dt>
              <dd>
                {health.last24h.delivered} delivered, {health.last24h.failed} failed, {health.last24h.pending} pending, {health.last24h.held} held
              </dd>
              <dt>Attempt latency</dt>
              <dd>{health.last24h.latencyMs ? `p50 ${health.last24h.latencyMs.p50} ms, p95 ${health.last24h.latencyMs.p95} ms (${health.last24h.latencyMs.attempts} attempts)` : '—'}</dd>
              <dt>Failed in a row</dt>
              <dd>{health.consecutiveFailures}</dd>
              <dt>Last failure</dt>
              <dd>
                <LastFailure failure={health.lastFailure} />
              </dd>
            </dl>
            <HealthChart hourly={health.last24h.hourly} />
          </>
        ) : (
          <p>Loading…</p>
        )}
      </section>
      {installation.integration === WEBHOOK && installation.status !== 'paused' && <BulkReplay installation={id} />}
      {installation.integration === WEBHOOK && <SigningSecret installation={id} />}
      {installation.integration === WEBHOOK && <PortalLink id={id} />}
    </>
  );
}
