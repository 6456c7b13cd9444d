import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySignature, verifyStandardSignature } from '../src/webhooks/signature';
import { percentile } from './load';

/** DESIGN.md's range of each retry's wait, ms. */
const RETRY_RANGES = [[1000, 1100], [2000, 2200], [4000, 4400]] as const;
const round = (value: number) => Math.round(value * 10) / 10;

/**
 * The bench's webhook receiver on 127.0.0.1: verifies every signature, answers what the
 * scenario scripts (200 unless `answer` says otherwise), and records when each POST of each
 * eventId arrived.
 */
export class BenchReceiver {
  url = '';
  invalid = 0;
  secrets: string[] = [];
  /** eventId -> arrival time (performance.now()) and answered status of every POST. */
  posts = new Map<string, { at: number; status: number }[]>();
  /** Status to answer a POST of `eventId` that is its n-th (0-based). */
  answer: (eventId: string, n: number) => number = () => 200;
  private server?: http.Server;

  async start(): Promise<this> {
    this.server = http.createServer({ keepAlive: true }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const at = performance.now();
        const body = Buffer.concat(chunks);
        if (!this.verified(req.headers, body)) {
          this.invalid += 1;
          res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad signature"}');
          return;
        }
        const { eventId } = JSON.parse(body.toString()) as { eventId: string };
        const seen = this.posts.get(eventId) ?? [];
        const status = this.answer(eventId, seen.length);
        seen.push({ at, status });
        this.posts.set(eventId, seen);
        res.writeHead(status, { 'content-type': 'application/json' }).end(status < 300 ? '{"received":true}' : '{"error":"scripted"}');
      });
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  /** The platform's signature, or Svix's (its own headers, the Standard Webhooks scheme) on a request from svix-server. */
  private verified(headers: http.IncomingHttpHeaders, body: Buffer): boolean {
    const svix = headers['svix-signature'];
    if (svix === undefined) return verifySignature(headers['x-platform-signature'] as string | undefined, body, this.secrets).valid;
    return verifyStandardSignature({ id: headers['svix-id'] as string, timestamp: headers['svix-timestamp'] as string, signature: svix as string }, body, this.secrets);
  }

  reset(answer: (eventId: string, n: number) => number = () => 200): void {
    this.posts = new Map();
    this.invalid = 0;
    this.answer = answer;
  }

  /** First 2xx arrival of each event. */
  delivered(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [eventId, posts] of this.posts) {
      const ok = posts.find((post) => post.status < 300);
      if (ok) out.set(eventId, ok.at);
    }
    return out;
  }

  /** Events POSTed `attempts` times without a 2xx: failed for good, none more will come. */
  exhausted(attempts: number): number {
    let count = 0;
    for (const posts of this.posts.values()) if (posts.length >= attempts && posts.every((post) => post.status >= 300)) count += 1;
    return count;
  }

  /** 2xx POSTs beyond the first of each event. */
  duplicates(): number {
    let extra = 0;
    for (const posts of this.posts.values()) extra += Math.max(0, posts.filter((post) => post.status < 300).length - 1);
    return extra;
  }

  /** Gaps between consecutive POSTs of one event after a 5xx, by retry number, against DESIGN.md's ranges; of the events whose eventId `keep` takes. */
  retryGaps(keep: (eventId: string) => boolean = () => true) {
    const byRetry: number[][] = [[], [], []];
    for (const [eventId, posts] of this.posts) {
      if (!keep(eventId)) continue;
      for (let k = 1; k < posts.length && k <= 3; k++) if (posts[k - 1]!.status >= 500) byRetry[k - 1]!.push(posts[k]!.at - posts[k - 1]!.at);
    }
    return byRetry.map((gaps, k) => ({
      retry: k + 1,
      count: gaps.length,
      rangeMs: RETRY_RANGES[k]!,
      minMs: round(Math.min(...gaps)),
      p50Ms: percentile(gaps, 50),
      p99Ms: percentile(gaps, 99),
      belowRange: gaps.filter((gap) => gap < RETRY_RANGES[k]![0]).length,
      p99OverRangeMs: round(percentile(gaps, 99) - RETRY_RANGES[k]![1]),
    }));
  }

  stop(): void {
    this.server?.closeAllConnections();
    this.server?.close();
  }
}
