import { createHmac, timingSafeEqual } from 'node:crypto';
import { badRequest } from './errors';

/**
 * Temporal's page tokens, sealed with an HMAC before they reach clients: a forged or
 * altered token is refused here at once with a 400, instead of by the server after retries.
 * Every API process of a deployment derives the same key, so any of them opens any token.
 */
export class PageTokens {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHmac('sha256', secret).update('page-tokens').digest();
  }

  private mac(token: Buffer): Buffer {
    return createHmac('sha256', this.key).update(token).digest().subarray(0, 16);
  }

  seal(token: Buffer): string {
    return `${token.toString('base64url')}.${this.mac(token).toString('base64url')}`;
  }

  open(sealed: string): Buffer {
    const [body = '', mac = ''] = sealed.split('.');
    const token = Buffer.from(body, 'base64url');
    const given = Buffer.from(mac, 'base64url');
    const expected = this.mac(token);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw badRequest('pageToken is not a token from a previous page', [{ field: 'pageToken', message: 'is not valid' }]);
    }
    return token;
  }
}
