import path from 'node:path';

/**
 * Integration processes at most, by default: 4 GiB at their 128 MiB limit each (one past
 * it only finishes its calls), about 1.7 GiB at the 52 MiB an idle one holds.
 */
export const ISOLATE_MAX_PROCESSES = 32;

/**
 * Connections one client address may hold to the API at once. Behind a load balancer every
 * client comes from its few addresses: raise it there.
 */
export const MAX_CONNECTIONS_PER_CLIENT = 1024;

/** Every setting the service reads from its environment (README lists them). */
export interface PlatformConfig {
  port: number;
  baseUrl: string;
  /** Where platform processes reach the API (an isolate's API binding): PLATFORM_INTERNAL_API_URL, else the base URL. */
  internalApiUrl: string;
  dataDir: string;
  /** Undefined until the embedded default generates one into the data directory. */
  adminToken?: string;
  allowPrivateTargets: boolean;
  /** `host:port` pairs integration code may reach although private (PLATFORM_EGRESS_ALLOW). */
  egressAllow: string[];
  /** Base64 of 32 bytes; undefined until the embedded default generates one. */
  encryptionKey?: string;
  /** PLATFORM_DECRYPTION_KEYS: older keys whose payloads and values are still opened, during a rotation. */
  decryptionKeys: string[];
  /** Undefined: the embedded default starts its own Temporal dev server. */
  temporalAddress?: string;
  temporalNamespace: string;
  /** Embedded default: the dev server's gRPC and Web UI ports. */
  devServerPort: number;
  devServerUiPort: number;
  /**
   * What a tool the service finds or builds inherits: the Temporal CLI is looked up through
   * TEMPORAL_CLI_PATH, PATH and XDG_CACHE_HOME, and `go install` needs Go's own variables.
   */
  toolEnv: NodeJS.ProcessEnv;
  taskQueue: string;
  logLevel: string;
  /** The delivery log: `postgres://…`, or `sqlite:<file>` (default: in the data directory). */
  databaseUrl: string;
  retentionDays: number;
  /** Delivery records link to their shard run here; the embedded default uses its own UI. */
  temporalUiUrl?: string;
  /** Long-lived delivery workflows events are spread over. */
  deliveryShards: number;
  /** Integration processes (workerd) at most in each platform process: PLATFORM_ISOLATE_MAX_PROCESSES. */
  isolateMaxProcesses: number;
  /** Open connections one client address may hold to the API: PLATFORM_MAX_CONNECTIONS_PER_CLIENT. */
  maxConnectionsPerClient: number;
  /** Browser origins (a Temporal UI) allowed to call /codec/* (PLATFORM_CODEC_CORS_ORIGINS). */
  codecCorsOrigins: string[];
  /**
   * OTLP/HTTP traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
   * OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces` (the OpenTelemetry convention); tracing is off without either.
   */
  otlpTracesUrl?: string;
  /** OTEL_SERVICE_NAME; each entry point has its own default. */
  serviceName?: string;
  /** The worker's /metrics port (a worker on its own; the embedded default serves metrics on the API's port). */
  workerMetricsPort: number;
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): PlatformConfig {
  const port = tcpPort('PORT', env.PORT, 8080);
  const devServerPort = tcpPort('PLATFORM_TEMPORAL_PORT', env.PLATFORM_TEMPORAL_PORT, 7233);
  const devServerUiPort = tcpPort('PLATFORM_TEMPORAL_UI_PORT', env.PLATFORM_TEMPORAL_UI_PORT, 8233);
  if (!env.TEMPORAL_ADDRESS) distinctPorts({ PORT: port, PLATFORM_TEMPORAL_PORT: devServerPort, PLATFORM_TEMPORAL_UI_PORT: devServerUiPort });
  const dataDir = path.resolve(env.PLATFORM_DATA_DIR ?? './data');
  return {
    port,
    baseUrl: (env.PLATFORM_BASE_URL ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    internalApiUrl: (env.PLATFORM_INTERNAL_API_URL || env.PLATFORM_BASE_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    dataDir,
    adminToken: env.PLATFORM_ADMIN_TOKEN || undefined,
    allowPrivateTargets: env.PLATFORM_ALLOW_PRIVATE_TARGETS === 'true',
    egressAllow: parseEgressAllow(env.PLATFORM_EGRESS_ALLOW ?? ''),
    encryptionKey: encryptionKey(env.PLATFORM_ENCRYPTION_KEY),
    decryptionKeys: (env.PLATFORM_DECRYPTION_KEYS ?? '').split(',').map((key) => key.trim()).filter(Boolean).map((key) => encryptionKey(key, 'PLATFORM_DECRYPTION_KEYS')!),
    temporalAddress: env.TEMPORAL_ADDRESS || undefined,
    temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
    devServerPort,
    devServerUiPort,
    toolEnv: env,
    taskQueue: env.PLATFORM_TASK_QUEUE || 'platform',
    logLevel: env.LOG_LEVEL || 'info',
    databaseUrl: databaseUrl(env.PLATFORM_DATABASE_URL, dataDir),
    retentionDays: positiveInteger('PLATFORM_DELIVERY_RETENTION_DAYS', env.PLATFORM_DELIVERY_RETENTION_DAYS, 30),
    temporalUiUrl: env.PLATFORM_TEMPORAL_UI_URL || undefined,
    deliveryShards: positiveInteger('PLATFORM_DELIVERY_SHARDS', env.PLATFORM_DELIVERY_SHARDS, 1),
    isolateMaxProcesses: positiveInteger('PLATFORM_ISOLATE_MAX_PROCESSES', env.PLATFORM_ISOLATE_MAX_PROCESSES, ISOLATE_MAX_PROCESSES),
    maxConnectionsPerClient: positiveInteger('PLATFORM_MAX_CONNECTIONS_PER_CLIENT', env.PLATFORM_MAX_CONNECTIONS_PER_CLIENT, MAX_CONNECTIONS_PER_CLIENT),
    codecCorsOrigins: (env.PLATFORM_CODEC_CORS_ORIGINS ?? '').split(',').map((origin) => origin.trim()).filter(Boolean),
    otlpTracesUrl: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || (env.OTEL_EXPORTER_OTLP_ENDPOINT ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined),
    serviceName: env.OTEL_SERVICE_NAME || undefined,
    workerMetricsPort: positiveInteger('PLATFORM_WORKER_METRICS_PORT', env.PLATFORM_WORKER_METRICS_PORT, 9464),
  };
}

/** The settings a process cannot run without once the embedded default had its chance to fill them. */
export function requireSetting<K extends keyof PlatformConfig>(config: PlatformConfig, key: K, envName: string): NonNullable<PlatformConfig[K]> {
  const value = config[key];
  if (value === undefined || value === null) throw new Error(`${envName} is not set`);
  return value as NonNullable<PlatformConfig[K]>;
}

/** `host:port,host:port`; IPv6 hosts in brackets (`[::1]:3000`). */
export function parseEgressAllow(raw: string): string[] {
  return raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(entry);
      if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) throw new Error(`PLATFORM_EGRESS_ALLOW: "${entry}" is not host:port`);
      return `${match[1]!.replace(/^\[(.*)\]$/, '$1').toLowerCase()}:${Number(match[2])}`;
    });
}

/** A delivery log on PostgreSQL (schemes are case-insensitive); the embedded default's is `sqlite:<file>`. */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url);

/**
 * `postgres://…` (or `postgresql://…`) or `sqlite:<file>`; anything else is refused rather
 * than taken for a file name (`mysql://x` became a SQLite file `./mysql:/x`). The message
 * shows the scheme only: the URL may hold a password.
 */
function databaseUrl(raw: string | undefined, dataDir: string): string {
  if (!raw) return `sqlite:${path.join(dataDir, 'delivery-log.db')}`;
  if (isPostgresUrl(raw) || /^sqlite:./i.test(raw)) return raw;
  throw new Error(`PLATFORM_DATABASE_URL must be postgres://user:password@host:5432/db or sqlite:<file>, got one starting "${raw.split(/(?<=:)/)[0]!.slice(0, 20)}"`);
}

/**
 * Base64 (or base64url) of exactly 32 bytes, answered in canonical base64: the data
 * directory fingerprints the key as written, so one key in two spellings is one key.
 * Node's decoder skips what is not base64, so a key pasted with stray characters decoded
 * to some other 32 bytes, and was refused only later, as "not the key the data directory
 * was started with"; only a key that encodes back to itself is taken.
 */
function encryptionKey(raw: string | undefined, name = 'PLATFORM_ENCRYPTION_KEY'): string | undefined {
  if (!raw) return undefined;
  const bytes = Buffer.from(raw, 'base64');
  const unpadded = raw.replace(/=$/, '');
  if (bytes.length !== 32 || (bytes.toString('base64') !== raw && bytes.toString('base64url') !== unpadded && bytes.toString('base64').replace(/=$/, '') !== unpadded)) {
    const why = /[^A-Za-z0-9+/_=-]/.test(raw) ? ', some of them not base64' : bytes.length === 32 ? ' that no encoder writes for 32 bytes (a changed last character?)' : '';
    throw new Error(`${name} must be 32 random bytes in base64 (44 characters; \`openssl rand -base64 32\` makes one), got ${raw.length} characters${why}`);
  }
  return bytes.toString('base64');
}

/**
 * A TCP port to listen on; unset or empty is the default (an empty PORT= listened on a
 * random port). Never 0: the URLs built from it (the base URL, the codec endpoint) would name port 0.
 */
function tcpPort(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d{1,5}$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535) throw new Error(`${name} must be a TCP port (1-65535), got "${raw}"`);
  return Number(raw);
}

/** The embedded default's three listeners need a port each (two on one failed seconds later as "taken by another process"). */
function distinctPorts(ports: Record<string, number>): void {
  const names = Object.keys(ports);
  for (const [i, a] of names.entries()) {
    const clash = names.slice(i + 1).find((b) => ports[b] === ports[a]);
    if (clash) throw new Error(`${a} and ${clash} are both ${ports[a]}: the API, the Temporal dev server and its UI need a port each`);
  }
}

function positiveInteger(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive whole number, got "${raw}"`);
  return Number(raw);
}
