import { HOP_BY_HOP } from '../net/hop-by-hop';
import { SESSION_COOKIE } from './auth';

/**
 * What an installation's public endpoint answers runs on the console's origin. Sandboxed
 * (no allow-same-origin), a page it serves has an origin of its own: its scripts cannot
 * read the console's session (GET /console/session's CSRF token) nor call the API with the
 * member's cookie. Scripts, forms and popups still work, as an OAuth callback page needs.
 * A policy the integration sets is kept beside it (browsers enforce both).
 */
export const PUBLIC_ENDPOINT_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-popups-to-escape-sandbox allow-modals allow-downloads';

const SESSION_COOKIE_NAME = new RegExp(`^\\s*(__Host-|__Secure-)?${SESSION_COOKIE}=`, 'i');

/** The caller's headers as integration code gets them: no hop-by-hop ones, and no console session among the cookies. */
export function requestHeadersForCode(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (HOP_BY_HOP.has(name) || value === undefined) continue;
    const joined = Array.isArray(value) ? value.join(', ') : value;
    if (name !== 'cookie') kept[name] = joined;
    else {
      const cookies = joined.split(';').filter((cookie) => !SESSION_COOKIE_NAME.test(cookie));
      if (cookies.length) kept.cookie = cookies.join(';').trim();
    }
  }
  return kept;
}

/** The code's answer headers as the caller gets them: no hop-by-hop ones, no cookie named as the console's session, and the sandbox. */
export function answerHeadersFromCode(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (HOP_BY_HOP.has(name) || value === undefined) continue;
    const shown = name === 'set-cookie' ? [value].flat().filter((cookie) => !SESSION_COOKIE_NAME.test(cookie)) : value;
    if (shown.length) kept[name] = shown;
  }
  const own = kept['content-security-policy'];
  kept['content-security-policy'] = own === undefined ? PUBLIC_ENDPOINT_CSP : [PUBLIC_ENDPOINT_CSP, ...[own].flat()];
  return kept;
}
