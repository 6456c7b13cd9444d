import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Context, Next } from 'koa';
import type { PortalLinks } from './portal-links';

/** Where `npm run build` writes the console (src/platform/bundle-console.ts). */
export const CONSOLE_DIST = path.join(__dirname, '..', '..', 'web');

/**
 * Nothing but the console's own script and style runs or loads; it talks to this origin
 * only, and no other site may frame it. Everything that came from outside (payloads,
 * answers, URLs, names) is rendered as text by the console, never as markup.
 */
export const CONSOLE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const ASSETS: Record<string, string> = { 'console.js': 'text/javascript; charset=utf-8', 'console.css': 'text/css; charset=utf-8' };

/**
 * Serves the web console: its page for /console and every path under it (the console
 * routes in the page), and its two assets, read once from the build; and the same page for
 * a delivery portal link (/portal/<token>), once the link is verified. The data comes from
 * the API's routes, with the session's cookie or the link's token.
 */
export function consolePages(portalLinks: PortalLinks, frameAncestorsOf: (org: string) => Promise<string[]>): (ctx: Context, next: Next) => Promise<void> {
  const files = new Map<string, Buffer>();
  const read = (name: string) => {
    let file = files.get(name);
    if (!file) files.set(name, (file = readFileSync(path.join(CONSOLE_DIST, name))));
    return file;
  };
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const portal = /^\/portal\/([^/]+)(\/.*)?$/.exec(ctx.path)?.[1];
    if (portal === undefined && (!(ctx.path === '/console' || ctx.path.startsWith('/console/')) || ctx.path === '/console/session')) return next();
    const asset = /^\/console\/assets\/([a-z.]+)$/.exec(ctx.path)?.[1];
    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    if (portal !== undefined) {
      // A link that expired, or that was altered, answers a page that says so (no view, no data).
      const grant = portalLinks.verify(portal);
      if (grant === undefined || grant === 'expired') {
        ctx.status = 401;
        ctx.type = 'text/html; charset=utf-8';
        ctx.set('Cache-Control', 'no-store');
        ctx.body = refusedPage(grant === 'expired' ? 'This portal link has expired. Ask the owner of the webhook for a new one.' : 'This portal link is not valid. Check that it was copied whole, or ask the owner of the webhook for a new one.');
        return;
      }
      // The sites its organization named may embed it (validated origins); no other.
      const ancestors = await frameAncestorsOf(grant.org);
      if (ancestors.length) ctx.set('Content-Security-Policy', CONSOLE_CSP.replace("frame-ancestors 'none'", `frame-ancestors ${ancestors.join(' ')}`));
    }
    if (asset !== undefined) {
      if (!ASSETS[asset]) return next();
      ctx.type = ASSETS[asset];
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = read(asset);
      return;
    }
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = read('index.html');
  };
}

/** The page a refused portal link gets: its reason as text, nothing of the console. */
function refusedPage(reason: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Portal link refused</title><link rel="stylesheet" href="/console/assets/console.css"></head><body><main><h1>Portal link refused</h1><p class="error" role="alert">${reason}</p></main></body></html>`;
}
