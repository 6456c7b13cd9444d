import { useEffect, useState } from 'preact/hooks';
import { api, type Installation, type Session } from './api';
import type { View } from './deliveries';

interface Integration {
  name: string;
  ownerOrg?: string;
  title: string;
  visibility: string;
  latestVersion: number;
}

interface LogLine {
  id: string;
  time: string;
  level: string;
  kind: string;
  installationId: string;
  version: number;
  message: string;
}

const LEVELS = ['', 'debug', 'info', 'warn', 'error'];
const integrationPath = (name: string, rest = '') => `/v1/integrations/${encodeURIComponent(name)}${rest}`;

/** The integrations the signed-in member's organizations own (all of them, for the administrator). */
export function IntegrationsPage({ session, view }: { session: Session; view: View }) {
  const [items, setItems] = useState<Integration[]>();
  const [error, setError] = useState<string>();
  useEffect(() => void api<{ items: Integration[] }>('GET', '/v1/integrations').then((page) => setItems(page.items.filter((item) => item.ownerOrg && (session.caller.kind === 'admin' || session.caller.orgs?.includes(item.ownerOrg)))), (err: Error) => setError(err.message)), [session]);
  const link = (name: string) => `${view.base}/integrations/${encodeURIComponent(name)}`;
  return (
    <section aria-labelledby="integrations-title">
      <h2 id="integrations-title">Integrations</h2>
      {error && <p class="error" role="alert">{error}</p>}
      <ul class="cards">
        {items?.map((item) => (
          <li key={item.name}>
            <a href={link(item.name)} onClick={(e) => (e.preventDefault(), view.go(link(item.name)))}>
              {item.title}
            </a>{' '}
            <small>
              {item.name}, {item.visibility}, latest version {item.latestVersion}
            </small>
          </li>
        ))}
      </ul>
      {items?.length === 0 && <p>No integrations of your organizations.</p>}
    </section>
  );
}

function IntegrationLogs({ name }: { name: string }) {
  const [level, setLevel] = useState('');
  const [lines, setLines] = useState<LogLine[]>([]);
  const [next, setNext] = useState<string>();
  const [error, setError] = useState<string>();
  const read = async (pageToken?: string) => {
    const query = new URLSearchParams({ ...(level && { level }), ...(pageToken && { pageToken }) }).toString();
    try {
      const page = await api<{ items: LogLine[]; nextPageToken?: string }>('GET', integrationPath(name, `/logs${query ? `?${query}` : ''}`));
      setLines((shown) => (pageToken ? [...shown, ...page.items] : page.items));
      setNext(page.nextPageToken);
      setError(undefined);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  useEffect(() => void read(), [name, level]);
  return (
    <section aria-labelledby="logs-title">
      <h2 id="logs-title">Logs</h2>
      <label>
        Level (and above)
        <select name="level" value={level} onInput={(e) => setLevel(e.currentTarget.value)}>
          {LEVELS.map((value) => (
            <option value={value}>{value || 'any'}</option>
          ))}
        </select>
      </label>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden">Log lines, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Level</th>
              <th scope="col">Installation and version</th>
              <th scope="col">Message</th>
            </tr>
          </thead>
          <tbody>
            {lines.map((line) => (
              <tr key={line.id}>
                <td>{new Date(line.time).toLocaleString()}</td>
                <td>{line.level}</td>
                <td>
                  {line.installationId}
                  <br />
                  <small>
                    version {line.version}, {line.kind}
                  </small>
                </td>
                <td>
                  <pre>{line.message}</pre>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {lines.length === 0 && !error && <p>No log lines.</p>}
      {next && (
        <div class="actions">
          <button type="button" class="secondary" onClick={() => read(next)}>
            Older lines
          </button>
        </div>
      )}
    </section>
  );
}

/** An integration its owner sees: its versions, the installations on each (those the member may see), and its logs. */
export function IntegrationPage({ name, view }: { name: string; view: View }) {
  const [integration, setIntegration] = useState<Integration>();
  const [installations, setInstallations] = useState<Installation[]>([]);
  const [error, setError] = useState<string>();
  useEffect(() => {
    api<Integration>('GET', integrationPath(name)).then(setIntegration, (err: Error) => setError(err.message));
    api<{ items: Installation[] }>('GET', `/v1/installations?integration=${encodeURIComponent(name)}`).then((page) => setInstallations(page.items), () => setInstallations([]));
  }, [name]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!integration) return <p>Loading…</p>;
  const versions = Array.from({ length: integration.latestVersion }, (_, i) => integration.latestVersion - i);
  const link = (id: string) => `${view.base}/installations/${encodeURIComponent(id)}`;
  return (
    <>
      <section aria-labelledby="integration-title">
        <h2 id="integration-title">
          {integration.title} <small>({integration.name})</small>
        </h2>
        <div class="table-wrap">
          <table>
            <caption>Versions, newest first, with the installations on each</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Installations</th>
              </tr>
            </thead>
            <tbody>
              {versions.map((version) => {
                const on = installations.filter((installation) => installation.version === version);
                return (
                  <tr key={version}>
                    <td>{version}</td>
                    <td>
                      {on.length}{' '}
                      {on.map((installation) => (
                        <a href={link(installation.id)} onClick={(e) => (e.preventDefault(), view.go(link(installation.id)))}>
                          {installation.id}{' '}
                        </a>
                      ))}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </section>
      <IntegrationLogs name={name} />
    </>
  );
}
