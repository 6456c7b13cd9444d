import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The platform's Prometheus metrics: one registry per process, served at `/metrics` on the
 * API's port and on the worker's PLATFORM_WORKER_METRICS_PORT. Label values are bounded
 * sets (statuses, event types, status classes), never ids.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'platform_' });

export const eventsIngested = new Counter({ name: 'platform_events_ingested_total', help: 'Events ingested (202), by type: new ones only, not an eventId answered again', labelNames: ['type'], registers: [registry] });
export const ingestUnavailable = new Counter({ name: 'platform_ingest_unavailable_total', help: 'Ingest answers of 503: the engine or the log did not take the event in time', registers: [registry] });
export const deliveriesFinished = new Counter({
  name: 'platform_deliveries_total',
  help: 'Deliveries that reached a final state, by status, event type and reason (empty when the receiver decided; installation_paused, installation_deleted, event_not_selected, held_dropped, platform_error)',
  labelNames: ['status', 'event_type', 'reason'],
  registers: [registry],
});
/** A reason as a label: its class, without the detail some carry (`platform_error: …`), so that labels stay few. */
export const reasonLabel = (reason: string | undefined): string => reason?.split(':')[0] ?? '';
export const attemptDuration = new Histogram({
  name: 'platform_attempt_duration_seconds',
  help: 'Delivery attempts (webhook POSTs and calls into integration code), by outcome class (2xx, 4xx, 5xx, error)',
  labelNames: ['status_class'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
export const deliveriesAbsent = new Counter({
  name: 'platform_deliveries_absent_total',
  help: 'Deliveries a shard handed to an attempt batch that are not in the delivery log at all: lost with the machine (SQLite synchronous=NORMAL) or purged; nothing was attempted',
  registers: [registry],
});
export const attemptsInterrupted = new Counter({
  name: 'platform_attempts_interrupted_total',
  help: 'Attempts whose answer was never seen, recorded interrupted: cut off by a stopping worker past its drain (stopped), or found started and unrecorded after a worker died (died); the receiver may have had them, and sees the retry too',
  labelNames: ['cause'],
  registers: [registry],
});
export const deliveriesHeld = new Counter({
  name: 'platform_deliveries_held_total',
  help: 'Deliveries recorded held, by event type and reason: installation_paused (the platform paused it, its receiver failing or gone; kept until a resume delivers or drops them) or receiver_failing (active, its receiver failing every attempt for 10 s; released once it answers)',
  labelNames: ['event_type', 'reason'],
  registers: [registry],
});
export const installationPauses = new Counter({
  name: 'platform_installation_pauses_total',
  help: 'Installations paused (by reason: member, receiver_failing, receiver_gone) and resumed (reason resumed)',
  labelNames: ['reason'],
  registers: [registry],
});
export const operationHandOverGap = new Gauge({
  name: 'platform_operation_hand_over_gap_seconds',
  help: 'The gap between two hand-overs of a background operation’s deliveries (bulk replays, releases of held deliveries), 25 at a time: 0.025 while new events’ first attempts start on time, doubled (up to 0.5) while they start late',
  registers: [registry],
});
export const retriesScheduled = new Counter({ name: 'platform_retries_scheduled_total', help: 'Attempts that ended in a retry wait', registers: [registry] });
export const logWriteLag = new Histogram({
  name: 'platform_delivery_log_write_lag_seconds',
  help: 'From the end of the last attempt of a write of a batch to its outcomes committed in the delivery log',
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
  registers: [registry],
});
export const publishes = new Histogram({ name: 'platform_publish_duration_seconds', help: 'Publishes of integration versions, by outcome (published, refused)', labelNames: ['outcome'], buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5], registers: [registry] });
export const integrationLogLines = new Counter({
  name: 'platform_integration_log_lines_total',
  help: 'Lines of integration code’s console, by outcome: kept; dropped_rate (past its installation’s rate), dropped_in_isolate (past what the isolate holds between sends), invalid (not a line), not_written (the delivery log failed)',
  labelNames: ['outcome'],
  registers: [registry],
});
export const isolateCalls = new Histogram({
  name: 'platform_isolate_call_duration_seconds',
  help: 'Calls into integration code, by kind (fetch, event, component) and outcome (HTTP status class; killed; refused: no room in the isolate pool)',
  labelNames: ['kind', 'outcome'],
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  registers: [registry],
});
export const isolatesStopped = new Counter({ name: 'platform_isolates_stopped_total', help: 'Isolate processes the pool stopped before they were idle for long, by reason (background_cpu: CPU spent long after their last call; make_room: idle, stopped for a new one at the cap; memory: past their memory bound, replaced and stopped once their calls ended; work_left_behind: a request out long after its last call)', labelNames: ['reason'], registers: [registry] });
export const isolateProcesses = new Gauge({ name: 'platform_isolate_processes', help: 'Isolate processes running or starting (at most PLATFORM_ISOLATE_MAX_PROCESSES)', registers: [registry] });
export const isolateStartsWaiting = new Gauge({ name: 'platform_isolate_starts_waiting', help: 'New isolate processes waiting for room in the pool (their calls refused after 5 s)', registers: [registry] });
export const temporalClientErrors = new Counter({ name: 'platform_temporal_client_errors_total', help: 'Temporal client calls that failed, by gRPC status code', labelNames: ['code'], registers: [registry] });

let countPendingRetries: (() => Promise<number>) | undefined;
new Gauge({
  name: 'platform_retries_pending',
  help: 'Deliveries waiting for a retry (pending, with at least one attempt), read from the delivery log at each scrape',
  registers: [registry],
  async collect() {
    if (countPendingRetries) this.set(await countPendingRetries());
  },
});

/** Where the pending-retries gauge reads from: the delivery log this process writes. */
export function trackPendingRetries(count: () => Promise<number>): void {
  countPendingRetries = count;
}

export const statusClass = (statusCode: number | undefined): string => (statusCode === undefined ? 'error' : `${Math.floor(statusCode / 100)}xx`);
