import { useEffect, useState } from 'preact/hooks';
import { api, usePortalToken } from './api';
import { DeliveriesPage, DeliveryPage, type View } from './deliveries';

/** The token of a delivery portal link (`/portal/<token>/...`), if this page is one. */
export const portalTokenOf = (pathname: string): string | undefined => /^\/portal\/([^/]+)/.exec(pathname)?.[1];

/** The installation a link names (its token's signed payload; the API checks the signature). */
function installationOf(token: string): string {
  const payload = token.slice('plk_'.length, token.indexOf('.'));
  return (JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as { i: string }).i;
}

function SigningSecret({ installation }: { installation: string }) {
  const [secret, setSecret] = useState<string>();
  const [rotated, setRotated] = useState(false);
  const [error, setError] = useState<string>();
  const reveal = () => api<{ secret: string }>('GET', `/v1/installations/${installation}/signing-secret`).then((answer) => setSecret(answer.secret), (err: Error) => setError(err.message));
  const rotate = () =>
    api<{ secret: string }>('POST', `/v1/installations/${installation}/signing-secret/rotate`).then(
      (answer) => (setSecret(answer.secret), setRotated(true)),
      (err: Error) => setError(err.message),
    );
  return (
    <section aria-labelledby="secret-title">
      <h2 id="secret-title">Signing secret</h2>
      <div class="actions">
        <button type="button" class="secondary" onClick={reveal}>
          Reveal secret
        </button>
        <button type="button" onClick={rotate}>
          Rotate secret
        </button>
      </div>
      {rotated && (
        <p class="notice" role="status">
          Rotated. Deliveries are signed with both secrets for 24 hours, then with the new one only.
        </p>
      )}
      {secret && <pre aria-label="Secret value">{secret}</pre>}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

/**
 * A receiver's view of one webhook installation, through a link its owner made: its
 * deliveries and their attempts, replay of its own, and its signing secret. No sign-in:
 * the link's token is the credential, and worth this installation only.
 */
export function Portal({ token, usePath }: { token: string; usePath: () => [string, (to: string) => void] }) {
  usePortalToken(token);
  const [path, go] = usePath();
  const installation = installationOf(token);
  const [url, setUrl] = useState<string>();
  useEffect(() => {
    api<{ configuration?: { webhook_url?: string } }>('GET', `/v1/installations/${installation}`).then((found) => setUrl(found.configuration?.webhook_url), () => undefined);
  }, [installation]);
  const base = `/portal/${token}`;
  const view: View = { base, portal: true, go };
  const delivery = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/deliveries/([^/?]+)`).exec(path)?.[1];
  return (
    <>
      <header>
        <h1>Webhook deliveries</h1>
        <nav aria-label="Portal">
          <a href={base} onClick={(e) => (e.preventDefault(), go(base))}>
            Deliveries
          </a>
        </nav>
        <span>{url}</span>
      </header>
      <main>
        {delivery ? (
          <DeliveryPage id={decodeURIComponent(delivery)} view={view} />
        ) : (
          <>
            <DeliveriesPage view={view} />
            <SigningSecret installation={installation} />
          </>
        )}
      </main>
    </>
  );
}
