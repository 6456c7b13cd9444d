import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from './api-client';
import { logLine, type LogRow, type Output } from './format';

export interface LogsOptions {
  installation?: string;
  /** Only these installations' lines are printed (`platform dev` on several). */
  installations?: string[];
  level?: string;
  since?: string;
  limit?: string;
  follow: boolean;
  /** Ends --follow (Ctrl-C). */
  stopped?: AbortSignal;
}

/** How often --follow asks for new lines. */
const FOLLOW_EVERY_MS = 1000;
/**
 * How far back, from the newest line seen, each ask of --follow reads again: a line is
 * sent when its call (or its waitUntil work, up to 30 s later) ends, with the time it was
 * written, and another process's lines commit a little later. Lines seen already are not
 * printed again.
 */
const OVERLAP_MS = 60_000;

type Page = { items: LogRow[]; nextPageToken?: string };

/** `platform logs <name>`: the newest lines, oldest first; with --follow, then each new one as it comes. */
export async function showLogs(api: ApiClient, output: Output, name: string, options: LogsOptions): Promise<void> {
  const path = `/v1/integrations/${encodeURIComponent(name)}/logs`;
  const query = (extra: Record<string, string | undefined>) => new URLSearchParams(Object.entries({ installation: options.installation, level: options.level, ...extra }).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const wanted = (line: LogRow) => !options.installations || options.installations.includes(line.installationId);
  const print = (lines: LogRow[]) => lines.filter(wanted).forEach((line) => output.print(output.json ? JSON.stringify(line) : logLine(line)));
  const first = await api.request<Page>('GET', `${path}?${query({ since: options.since, limit: options.limit })}`);
  const oldestFirst = [...first.items].reverse();
  if (!options.follow) {
    if (output.json) return output.print(JSON.stringify(first, null, 2));
    return output.print(oldestFirst.length ? oldestFirst.map(logLine).join('\n') : '(no log lines)');
  }
  print(oldestFirst);
  // Lines are compared by the server's times only (the clock here may be off), and none
  // older than the first page's oldest is printed after it.
  const after = (line: LogRow, floor?: LogRow) => !floor || line.time > floor.time || (line.time === floor.time && line.id > floor.id);
  const floor = first.nextPageToken ? oldestFirst[0] : undefined;
  const seen = new Map(first.items.map((line) => [line.id, Date.parse(line.time)]));
  let newest = first.items.length ? Date.parse(first.items[0]!.time) : undefined;
  while (!options.stopped?.aborted) {
    await sleep(FOLLOW_EVERY_MS, undefined, { signal: options.stopped }).catch(() => undefined);
    if (options.stopped?.aborted) break;
    const since = newest === undefined ? options.since : new Date(newest - OVERLAP_MS).toISOString();
    const fresh: LogRow[] = [];
    for (let token: string | undefined, more = true; more; more = token !== undefined) {
      const page: Page = await api.request<Page>('GET', `${path}?${query({ since, limit: '1000', pageToken: token })}`);
      fresh.push(...page.items.filter((line) => !seen.has(line.id) && after(line, floor)));
      token = page.nextPageToken;
    }
    fresh.sort((a, b) => a.time.localeCompare(b.time) || a.id.localeCompare(b.id));
    print(fresh);
    for (const line of fresh) {
      const time = Date.parse(line.time);
      seen.set(line.id, time);
      newest = Math.max(newest ?? time, time);
    }
    // Only lines inside the window can come again.
    for (const [id, time] of seen) if (newest !== undefined && time < newest - 2 * OVERLAP_MS) seen.delete(id);
  }
}
