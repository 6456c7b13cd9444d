import { useEffect, useState } from 'preact/hooks';
import { api, installationPath, usePortalToken } from './api';
import { SigningSecret } from './secret';
import { DeliveriesPage, DeliveryPage, type View } from './deliveries';

/** The token of a delivery portal link (`/portal/<token>/...`), if this page is one. */
export const portalTokenOf = (pathname: string): string | undefined => /^\/portal\/([^/]+)/.exec(pathname)?.[1];

/** The installation a link names (its token's signed payload; the API checks the signature). */
function installationOf(token: string): string {
  const payload = token.slice('plk_'.length, token.indexOf('.'));
  return (JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as { i: string }).i;
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
    api<{ configuration?: { webhook_url?: string } }>('GET', installationPath(installation)).then((found) => setUrl(found.configuration?.webhook_url), () => undefined);
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
