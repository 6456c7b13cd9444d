import { useState } from 'preact/hooks';
import { api, installationPath } from './api';

interface SecretAnswer {
  secret: string;
  previousExpiresAt?: string;
}

/** An installation's signing secret: revealed on demand, rotated (the old one signs on until its end, shown). */
export function SigningSecret({ installation }: { installation: string }) {
  const [shown, setShown] = useState<SecretAnswer>();
  const [rotated, setRotated] = useState(false);
  const [error, setError] = useState<string>();
  const reveal = () => api<SecretAnswer>('GET', installationPath(installation, '/signing-secret')).then(setShown, (err: Error) => setError(err.message));
  const rotate = () =>
    api<SecretAnswer>('POST', installationPath(installation, '/signing-secret/rotate')).then(
      (answer) => (setShown(answer), setRotated(true)),
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
          Rotated. Deliveries are signed with both secrets until the old one ends, then with the new one only.
        </p>
      )}
      {shown && <pre aria-label="Secret value">{shown.secret}</pre>}
      {shown?.previousExpiresAt && <p>The previous secret is still signed with until {new Date(shown.previousExpiresAt).toLocaleString()}.</p>}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
