import type { LogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import { Runtime } from '@temporalio/worker';
import type { Logger } from '../logger';

const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/**
 * SDK warnings about what the platform does by design, logged as info: the retry batches'
 * worker (see createWorker) runs activities only.
 */
const BY_DESIGN = new Set(['No workflows registered, not polling for workflow tasks']);

/**
 * Routes the Temporal SDK's own logs into pino, so every line of the service is structured
 * JSON. Its info lines (bundling, state changes) are only shown at debug.
 */
export function temporalRuntimeLogger(logger: Logger): TemporalLogger {
  const verbose = logger.level === 'debug' || logger.level === 'trace';
  const child = logger.child({ component: 'temporal-sdk' }, { level: verbose ? logger.level : 'warn' });
  const at = (level: LogLevel) => (message: string, meta?: LogMetadata) => child[levels[level === 'WARN' && BY_DESIGN.has(message) ? 'INFO' : level]](meta ?? {}, message);
  return { log: (level, message, meta) => at(level)(message, meta), trace: at('TRACE'), debug: at('DEBUG'), info: at('INFO'), warn: at('WARN'), error: at('ERROR') };
}

/**
 * Installs the process-wide Temporal runtime with its logs, native core's included, in
 * pino. It takes no signal: the process's lifecycle (runEntryPoint) owns SIGINT and SIGTERM,
 * and its stop begins the worker's drain (see createWorker), which the runtime's own
 * handler skipped: a retry falling due in the drain went out, and was cut off at its end.
 */
export function installTemporalRuntime(logger: Logger): void {
  Runtime.install({ logger: temporalRuntimeLogger(logger), telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } }, shutdownSignals: [] });
}
