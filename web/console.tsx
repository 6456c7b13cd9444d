import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure, useSessionToken, type Session } from './api';
import { DeliveriesPage, DeliveryPage, type View } from './deliveries';
import { InstallationPage, InstallationsPage } from './installations';
import { IntegrationPage, IntegrationsPage } from './integrations';
import { Portal, portalTokenOf } from './portal';

/** Where the console is: its pages are paths under /console, changed without a reload. */
export function usePath(): [string, (to: string) => void] {
  const [path, setPath] = useState(location.pathname + location.search);
  useEffect(() => {
    const back = () => setPath(location.pathname + location.search);
    addEventListener('popstate', back);
    return () => removeEventListener('popstate', back);
  }, []);
  return [path, (to) => (history.pushState(null, '', to), setPath(to))];
}

function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string>();
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      onSignedIn(await api<Session>('POST', '/console/session', { token }));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <main>
      <form class="signin" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to the console</h1>
        <label>
          Token
          <input type="password" name="token" autocomplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        </label>
        {error && <p class="error" role="alert">{error}</p>}
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

function Console() {
  const [session, setSession] = useState<Session | null>();
  const [path, go] = usePath();
  useEffect(() => {
    api<Session>('GET', '/console/session').then(
      (found) => (useSessionToken(found.csrfToken), setSession(found)),
      (err: unknown) => (err instanceof ApiFailure && err.status === 401 ? setSession(null) : setSession(null)),
    );
  }, []);
  if (session === undefined) return <p>Loading…</p>;
  if (session === null) return <SignIn onSignedIn={(found) => (useSessionToken(found.csrfToken), setSession(found))} />;
  const signOut = async () => {
    await api('DELETE', '/console/session');
    setSession(null);
  };
  const view: View = { base: '/console', portal: false, go };
  const nav = (to: string, label: string) => (
    <a href={to} aria-current={path === to || (to !== '/console' && path.startsWith(to)) ? 'page' : undefined} onClick={(e) => (e.preventDefault(), go(to))}>
      {label}
    </a>
  );
  return (
    <>
      <header>
        <h1>Integration platform</h1>
        <nav aria-label="Console">
          {nav('/console', 'Deliveries')}
          {nav('/console/installations', 'Installations')}
          {nav('/console/integrations', 'Integrations')}
        </nav>
        <span>
          {session.caller.kind === 'admin' ? 'administrator' : session.caller.userId}{' '}
          <button type="button" class="secondary" onClick={signOut}>
            Sign out
          </button>
        </span>
      </header>
      <main>
        <Page path={path} session={session} view={view} />
      </main>
    </>
  );
}

/** The console's page for a path (its query, filters, read by the page itself). */
function Page({ path, session, view }: { path: string; session: Session; view: View }) {
  const [, section, id] = /^\/console(?:\/(deliveries|installations|integrations)(?:\/([^/?]+))?)?/.exec(path) ?? [];
  const key = id && decodeURIComponent(id);
  if (section === 'deliveries' && key) return <DeliveryPage id={key} view={view} />;
  if (section === 'installations') return key ? <InstallationPage id={key} view={view} /> : <InstallationsPage session={session} view={view} />;
  if (section === 'integrations') return key ? <IntegrationPage name={key} view={view} /> : <IntegrationsPage session={session} view={view} />;
  return <DeliveriesPage key={path} session={session} view={view} />;
}

const portal = portalTokenOf(location.pathname);
const root = document.getElementById('console')!;
// The page's "Loading" text goes: the console replaces it.
root.replaceChildren();
render(portal ? <Portal token={portal} usePath={usePath} /> : <Console />, root);
