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

  /**
   * A page read after the cursor a token carries, and the token of the next one. The
   * cursor is sealed with what it pages (`purpose`), so that a token of one list is
   * refused by another rather than read as its cursor.
   */
  async page<Cursor, Item>(purpose: string, pageToken: string | undefined, read: (after?: Cursor) => Promise<{ items: Item[]; next?: Cursor }>): Promise<{ items: Item[]; nextPageToken?: string }> {
    let after: Cursor | undefined;
    if (pageToken) {
      const sealed = JSON.parse(this.open(pageToken).toString('utf8')) as { of?: string; after?: Cursor };
      if (sealed.of !== purpose) throw badRequest(`pageToken is not a token of this list (${purpose})`, [{ field: 'pageToken', message: 'is of another list' }]);
      after = sealed.after;
    }
    const page = await read(after);
    return { items: page.items, ...(page.next && { nextPageToken: this.seal(Buffer.from(JSON.stringify({ of: purpose, after: page.next }))) }) };
  }
}
