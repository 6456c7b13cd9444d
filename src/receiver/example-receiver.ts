import type { IncomingMessage, ServerResponse } from 'node:http';
import { SIGNATURE_HEADER, verifySignature } from '../webhooks/signature';

export interface WebhookEvent {
  eventId: string;
  type: string;
  installationId: string;
  [field: string]: unknown;
}

export interface ExampleReceiverOptions {
  /** The installation's signing secrets; during a rotation, both. */
  secrets: string[];
  /** Runs after the answer is sent, once per eventId within the retention window. */
  onEvent?: (event: WebhookEvent) => void | Promise<void>;
  onError?: (error: unknown, event: WebhookEvent) => void;
  /** How long an eventId is remembered for dedupe; 10 minutes by default. */
  retentionMs?: number;
  toleranceSeconds?: number;
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

/**
 * SPEC.md's example receiver on web-standard Request/Response: 405 for anything but POST,
 * 401 `{error}` for a bad signature, repeats of an eventId ignored, `{received: true}`.
 */
export function createExampleReceiver(options: ExampleReceiverOptions): (request: Request) => Promise<Response> {
  const retentionMs = options.retentionMs ?? 10 * 60 * 1000;
  const seen = new Map<string, number>();
  const forgetExpired = (now: number) => {
    // Insertion order is expiry order, so the scan stops at the first live entry.
    for (const [eventId, expiresAt] of seen) {
      if (expiresAt > now) break;
      seen.delete(eventId);
    }
  };

  return async (request) => {
    if (request.method !== 'POST') return new Response('Method not allowed', { status: 405, headers: { 'Content-Type': 'text/plain' } });
    const rawBody = new Uint8Array(await request.arrayBuffer());
    const verification = verifySignature(request.headers.get(SIGNATURE_HEADER), rawBody, options.secrets, { toleranceSeconds: options.toleranceSeconds });
    if (!verification.valid) return json(401, { error: verification.reason });
    let event: WebhookEvent;
    try {
      event = JSON.parse(Buffer.from(rawBody).toString('utf8')) as WebhookEvent;
    } catch {
      return json(400, { error: 'body is not JSON' });
    }
    const now = Date.now();
    forgetExpired(now);
    if (!seen.has(event.eventId)) {
      seen.set(event.eventId, now + retentionMs);
      // Answer first; the event's own work runs after (SPEC.md: respond quickly).
      setImmediate(() => {
        Promise.resolve()
          .then(() => options.onEvent?.(event))
          .catch((error) => (options.onError ?? ((e) => console.error('webhook handler failed', e)))(error, event));
      });
    }
    return json(200, { received: true });
  };
}

/** Serves a fetch-style handler from node:http. */
export function toNodeListener(handler: (request: Request) => Promise<Response>) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, { method: req.method, headers, body: hasBody ? Buffer.concat(chunks) : undefined });
      handler(request)
        .then(async (response) => {
          res.writeHead(response.status, Object.fromEntries(response.headers));
          res.end(Buffer.from(await response.arrayBuffer()));
        })
        .catch(() => {
          res.writeHead(500, { 'Content-Type': 'application/json' });
          res.end('{"error":"receiver failed"}');
        });
    });
  };
}
