/** Pure formatting for the terminal; the commands only fetch and print. */

/** Where a command's answer goes: JSON with --json. */
export interface Output {
  json: boolean;
  print: (text: string) => void;
}

/** JSON with --json, else the human form. */
export const show = (output: Output, value: unknown, human: () => string) => output.print(output.json ? JSON.stringify(value, null, 2) : human());

export interface Column<T> {
  header: string;
  value: (row: T) => string;
}

/** A plain aligned table; the last column is not padded. */
export function table<T>(rows: T[], columns: Column<T>[]): string {
  if (rows.length === 0) return '(none)';
  const cells = [columns.map((c) => c.header), ...rows.map((row) => columns.map((c) => c.value(row)))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  return cells.map((line) => line.map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

export interface DeliveryRow {
  id: string;
  status: string;
  eventType: string;
  createdAt: string;
  url?: string;
  skipReason?: string;
  failureReason?: string;
  heldReason?: string;
  replayOf?: string;
  attempts?: AttemptRow[];
}

export interface AttemptRow {
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode?: number;
  error?: string;
  responseBody?: string;
  nextDelayMs?: number;
}

export const deliveryColumns: Column<DeliveryRow>[] = [
  { header: 'DELIVERY', value: (d) => d.id },
  { header: 'STATUS', value: (d) => d.status },
  { header: 'EVENT', value: (d) => d.eventType },
  { header: 'CREATED', value: (d) => d.createdAt },
];

export function outcome(attempt: AttemptRow): string {
  return attempt.statusCode !== undefined ? `HTTP ${attempt.statusCode}` : (attempt.error ?? 'unknown');
}

export function deliveryDetail(delivery: DeliveryRow): string {
  const lines = [
    `Delivery  ${delivery.id}`,
    `Status    ${delivery.status}${[delivery.skipReason, delivery.failureReason, delivery.heldReason].filter(Boolean).map((reason) => ` (${reason})`).join('')}`,
    `Event     ${delivery.eventType}`,
    `URL       ${delivery.url ?? ''}`,
    `Created   ${delivery.createdAt}`,
  ];
  if (delivery.replayOf) lines.push(`Replays   ${delivery.replayOf}`);
  lines.push('', table(delivery.attempts ?? [], [
    { header: '#', value: (a) => String(a.attempt) },
    { header: 'STARTED', value: (a) => a.startedAt },
    { header: 'TOOK', value: (a) => `${a.durationMs} ms` },
    { header: 'OUTCOME', value: outcome },
    { header: 'NEXT WAIT', value: (a) => (a.nextDelayMs !== undefined ? `${a.nextDelayMs} ms` : '-') },
    { header: 'RESPONSE', value: (a) => (a.responseBody ?? '').replace(/\s+/g, ' ').slice(0, 60) },
  ]));
  return lines.join('\n');
}

export interface LogRow {
  id: string;
  time: string;
  level: string;
  kind: string;
  installationId: string;
  eventId?: string;
  message: string;
}

/** One log line as `time LEVEL kind installation [event] message`, a message's further lines indented under it. */
export function logLine(line: LogRow): string {
  const head = [line.time, line.level.toUpperCase().padEnd(5), line.kind.padEnd(9), line.installationId, ...(line.eventId ? [line.eventId] : [])].join('  ');
  return `${head}  ${line.message.replace(/\n/g, '\n    ')}`;
}
