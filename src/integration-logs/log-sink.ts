import { LOG_LEVELS, type IntegrationLogStore, type LogKind, type LogLevel, type NewLogLine } from '../delivery-log/integration-logs';
import { GroupCommit } from '../group-commit';
import { integrationLogLines } from '../metrics';
import type { Logger } from '../logger';
import { TokenBucket } from './token-bucket';
import type { SourceLines } from './source-lines';

/** Whose lines they are: the platform knows it from the isolate that sent them, never from the lines. */
export interface LogSource {
  integration: string;
  version: number;
  installationId: string;
  organizationId: string;
}

/**
 * Bounds on one installation's log, each counted when it drops a line. A logging loop
 * costs its own installation's lines, and at most `linesPerSecond` rows a second of
 * writes per process; what is kept never passes about `keptPerInstallation` lines.
 */
export const LOG_LIMITS = {
  /** A line's message past this many characters is cut. */
  lineChars: 4096,
  linesPerSecond: 50,
  burstLines: 500,
  /** Lines kept per installation; older ones go as new ones come. */
  keptPerInstallation: 10_000,
  /** How often, at most, the platform writes a line saying how many were dropped. */
  noticeEveryMs: 10_000,
  /** Sends of lines an installation's isolate may make a second (bursts of 100): each costs a parse. */
  sendsPerSecond: 20,
  /** Lines one send may carry; more are dropped, counted. */
  linesPerSend: 500,
};

/** Kinds integration code's lines may carry: `platform` is the platform's own. */
const CODE_KINDS: readonly LogKind[] = ['fetch', 'event', 'component', 'load'];
/** Lines are written this late at most (waitUntil work ends 30 s after its call); older times are the isolate's clock wrong. */
const LATEST_MS = 120_000;
const EVENT_ID = /^[A-Za-z0-9_.:-]{1,200}$/;
/** Lines not written by then are counted not written: a database away holds no queue of them. */
const WRITE_DEADLINE_MS = 30_000;
const TRACE_ID = /^[0-9a-f]{32}$/;

/** What the sink keeps of each installation that logs: its source and its budgets. */
interface InstallationBudget {
  source: LogSource;
  bucket: TokenBucket;
  sends: TokenBucket;
  /** Dropped since the last notice. */
  dropped: number;
  lastNoticeAt: number;
  /** Lines written since the last trim; a first write trims at once (a restart knows no count). */
  sinceTrim: number;
}

/**
 * Takes the lines an isolate sends about itself, bounds them per installation, and writes
 * them to the log in group commits. Writing never holds the isolate: it is answered once
 * the lines are counted, before they are committed.
 */
export class IntegrationLogSink {
  private readonly installations = new Map<string, InstallationBudget>();
  private readonly writes: GroupCommit<NewLogLine[], undefined>;

  constructor(
    private readonly store: IntegrationLogStore,
    /** Names a stack's bundle positions as source lines, where the version has a source map. */
    private readonly sourceLines?: SourceLines,
    private readonly logger?: Logger,
    private readonly limits = LOG_LIMITS,
  ) {
    this.writes = new GroupCommit(async (batches) => {
      await store.append(batches.flat());
      return batches.map(() => undefined);
    }, 256);
    // Drops are said even once a loop has stopped logging.
    setInterval(() => this.sayDropped(Date.now()), limits.noticeEveryMs).unref();
  }

  /** Whether the installation's isolate may send now (its body not read yet); a refused send counts as a drop of unknown size. */
  admitsSend(source: LogSource): boolean {
    const now = Date.now();
    const admitted = this.installationOf(source, now).sends.take(1, now) === 1;
    if (!admitted) integrationLogLines.inc({ outcome: 'dropped_rate' });
    return admitted;
  }

  /** `body` is what the isolate sent: `{lines, dropped}`, trusted for nothing but its own lines. */
  accept(source: LogSource, body: unknown): void {
    const now = Date.now();
    const installation = this.installationOf(source, now);
    const { lines = [], dropped = 0 } = (typeof body === 'object' && body !== null ? body : {}) as { lines?: unknown; dropped?: unknown };
    const given = Array.isArray(lines) ? lines : [];
    // Tokens first: lines past the rate cost no checking.
    const granted = installation.bucket.take(Math.min(given.length, this.limits.linesPerSend), now);
    const kept = given.slice(0, granted).flatMap((line) => lineOf(line, source, now, this.limits.lineChars) ?? []);
    // What the isolate says it dropped counts, up to what it could have held.
    const droppedInIsolate = Number.isSafeInteger(dropped) && (dropped as number) > 0 ? Math.min(dropped as number, 1_000_000) : 0;
    installation.dropped += given.length - granted + droppedInIsolate;
    integrationLogLines.inc({ outcome: 'kept' }, kept.length);
    integrationLogLines.inc({ outcome: 'dropped_rate' }, given.length - granted);
    integrationLogLines.inc({ outcome: 'dropped_in_isolate' }, droppedInIsolate);
    integrationLogLines.inc({ outcome: 'invalid' }, granted - kept.length);
    if (now - installation.lastNoticeAt >= this.limits.noticeEveryMs) this.sayDropped(now, [installation]);
    this.write(installation, kept);
  }

  private installationOf(source: LogSource, now: number): InstallationBudget {
    let installation = this.installations.get(source.installationId);
    if (!installation) {
      installation = {
        source,
        bucket: new TokenBucket(this.limits.linesPerSecond, this.limits.burstLines, now),
        sends: new TokenBucket(this.limits.sendsPerSecond, this.limits.sendsPerSecond * 5, now),
        dropped: 0,
        lastNoticeAt: now,
        sinceTrim: Infinity,
      };
      this.installations.set(source.installationId, installation);
    }
    // The newest version that wrote is the one a notice names.
    installation.source = source;
    return installation;
  }

  /** One platform line per installation that dropped lines since its last notice. */
  private sayDropped(now: number, which: Iterable<InstallationBudget> = this.installations.values()): void {
    for (const installation of which) {
      if (installation.dropped === 0) {
        // Quiet ones leave the map: it holds the installations that logged lately, not all that ever did.
        if (now - installation.lastNoticeAt > 6 * this.limits.noticeEveryMs && installation.bucket.isFull(now)) this.installations.delete(installation.source.installationId);
        continue;
      }
      const message = `${installation.dropped} log line${installation.dropped === 1 ? '' : 's'} dropped: past this installation's bound of ${this.limits.linesPerSecond} lines a second (bursts of ${this.limits.burstLines}), or past what its isolate holds between sends`;
      this.write(installation, [{ ...installation.source, time: now, level: 'warn', kind: 'platform', message }]);
      installation.dropped = 0;
      installation.lastNoticeAt = now;
    }
  }

  private write(installation: InstallationBudget, lines: NewLogLine[]): void {
    if (lines.length === 0) return;
    installation.sinceTrim += lines.length;
    const trim = installation.sinceTrim >= this.limits.keptPerInstallation / 10;
    if (trim) installation.sinceTrim = 0;
    const warn = (what: string) => (err: Error) => this.logger?.warn({ err: err.message, installation: installation.source.installationId, lines: lines.length }, what);
    const named = this.sourceLines ? Promise.all(lines.map(async (line) => ({ ...line, message: await this.sourceLines!.name(line.integration, line.version, line.message) }))) : Promise.resolve(lines);
    void named.then((ready) => this.writes.submit(ready, Date.now() + WRITE_DEADLINE_MS)).then(
      () => (trim ? this.store.trim(installation.source.installationId, this.limits.keptPerInstallation).catch(warn('integration log not trimmed')) : undefined),
      (err: Error) => {
        integrationLogLines.inc({ outcome: 'not_written' }, lines.length);
        warn('integration log lines not written')(err);
      },
    );
  }
}

/** A line as the isolate gave it, checked; undefined if it is not one. */
function lineOf(given: unknown, source: LogSource, now: number, lineChars: number): NewLogLine | undefined {
  if (typeof given !== 'object' || given === null) return undefined;
  const { time, level, kind, message, eventId, traceId } = given as Record<string, unknown>;
  if (typeof message !== 'string' || !LOG_LEVELS.includes(level as LogLevel) || !CODE_KINDS.includes(kind as LogKind)) return undefined;
  return {
    ...source,
    time: typeof time === 'number' && Number.isFinite(time) ? Math.min(now, Math.max(now - LATEST_MS, Math.floor(time))) : now,
    level: level as LogLevel,
    kind: kind as LogKind,
    ...(typeof eventId === 'string' && EVENT_ID.test(eventId) && { eventId }),
    ...(typeof traceId === 'string' && TRACE_ID.test(traceId) && { traceId }),
    // PostgreSQL's text takes no NUL: one would fail the whole group commit, other installations' lines with it.
    message: (message.length > lineChars ? `${message.slice(0, lineChars)}… (cut at ${lineChars} characters)` : message).replaceAll('\0', '\uFFFD'),
  };
}
