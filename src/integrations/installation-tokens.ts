import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * An installation's token for the platform API: `itk_<installation id>.<HMAC>`, keyed by
 * PLATFORM_ENCRYPTION_KEY, so that every API and worker process can issue it to the
 * integration's isolate and verify it, and nothing needs storing. It is worth exactly its
 * installation: deleting the installation voids it.
 */
export class InstallationTokens {
  private readonly key: Buffer;

  constructor(encryptionKey: string) {
    this.key = createHmac('sha256', Buffer.from(encryptionKey, 'base64')).update('installation-tokens').digest();
  }

  private mac(installationId: string): string {
    return createHmac('sha256', this.key).update(installationId).digest('base64url');
  }

  issue(installationId: string): string {
    return `itk_${installationId}.${this.mac(installationId)}`;
  }

  /** The installation id a token stands for, or undefined. */
  verify(token: string): string | undefined {
    const match = /^itk_([A-Za-z0-9_-]{1,80})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!match) return undefined;
    const expected = Buffer.from(this.mac(match[1]!));
    const given = Buffer.from(match[2]!);
    return given.length === expected.length && timingSafeEqual(given, expected) ? match[1] : undefined;
  }
}
