import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Platform-Signature';

function hmacHex(secret: string, timestamp: number, rawBody: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

/**
 * `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`: one v1 per secret still valid, newest first,
 * so a receiver holding either the new or the rotated-out secret verifies (as Stripe does).
 */
export function signatureHeader(rawBody: string | Uint8Array, secrets: readonly string[], timestamp: number): string {
  return [`t=${timestamp}`, ...secrets.map((secret) => `v1=${hmacHex(secret, timestamp, rawBody)}`)].join(',');
}

/**
 * Standard Webhooks' headers (the standard-webhooks specification), which an installation
 * may ask for beside SIGNATURE_HEADER: receivers check them with the specification's own
 * libraries, in their own language.
 */
export const STANDARD_WEBHOOK_HEADERS = { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' } as const;

/** A `whsec_` secret's key as the specification reads it: the base64 after the prefix. */
const standardKey = (secret: string): Buffer => Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');

/**
 * `webhook-signature`: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, one entry per
 * secret still valid (space-separated, newest first), as SIGNATURE_HEADER carries one v1 each.
 */
export function standardSignature(id: string, timestamp: number, rawBody: string | Uint8Array, secrets: readonly string[]): string {
  return secrets.map((secret) => `v1,${createHmac('sha256', standardKey(secret)).update(`${id}.${timestamp}.`).update(rawBody).digest('base64')}`).join(' ');
}

/** Receiver-side check of STANDARD_WEBHOOK_HEADERS (or Svix's, the same scheme under `svix-` names): a v1 entry that matches a secret, within the tolerance. */
export function verifyStandardSignature(
  headers: { id?: string; timestamp?: string; signature?: string },
  rawBody: string | Uint8Array,
  secrets: readonly string[],
  { toleranceSeconds = 300, now = Math.floor(Date.now() / 1000) }: VerifyOptions = {},
): boolean {
  const timestamp = Number(headers.timestamp);
  if (!headers.id || !headers.signature || !Number.isInteger(timestamp) || Math.abs(now - timestamp) > toleranceSeconds) return false;
  const given = headers.signature.split(' ').map((entry) => Buffer.from(entry));
  const expected = standardSignature(headers.id, timestamp, rawBody, secrets).split(' ').map((entry) => Buffer.from(entry));
  let matched = false;
  for (const candidate of given) for (const bytes of expected) matched = (candidate.length === bytes.length && timingSafeEqual(candidate, bytes)) || matched;
  return matched;
}

export type Verification = { valid: true; timestamp: number } | { valid: false; reason: string };

export interface VerifyOptions {
  /** Reject signatures whose t is further than this from now (replay protection). */
  toleranceSeconds?: number;
  /** Unix seconds; for receivers that keep their own clock. */
  now?: number;
}

/**
 * Receiver-side check of DESIGN.md §3: parses by commas, needs t and at least one v1,
 * rejects stale timestamps, compares every candidate in constant time.
 */
export function verifySignature(
  header: string | null | undefined,
  rawBody: string | Uint8Array,
  secrets: string | readonly string[],
  { toleranceSeconds = 300, now = Math.floor(Date.now() / 1000) }: VerifyOptions = {},
): Verification {
  if (!header) return { valid: false, reason: 'missing signature header' };
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d+$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) signatures.push(value.toLowerCase());
  }
  if (timestamp === undefined) return { valid: false, reason: 'signature header has no timestamp' };
  if (signatures.length === 0) return { valid: false, reason: 'signature header has no v1 signature' };
  if (Math.abs(now - timestamp) > toleranceSeconds) return { valid: false, reason: 'signature timestamp is outside the tolerance' };
  const expected = (typeof secrets === 'string' ? [secrets] : secrets).map((secret) => Buffer.from(hmacHex(secret, timestamp!, rawBody), 'hex'));
  let matched = false;
  for (const candidate of signatures) {
    const candidateBytes = Buffer.from(candidate, 'hex');
    // Every comparison runs, so timing does not reveal which secret or signature matched.
    for (const bytes of expected) matched = timingSafeEqual(bytes, candidateBytes) || matched;
  }
  return matched ? { valid: true, timestamp } : { valid: false, reason: 'no signature matches' };
}
