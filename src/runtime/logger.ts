/**
 * GitBook's `Logger(namespace)`: console lines prefixed with `[namespace]`. Integration
 * code's console output is its log (the platform keeps it for the integration's owners).
 */
export function Logger(namespace: string) {
  const line = (message: string) => `[${namespace}] ${message}`;
  return {
    debug: (message: string, ...rest: unknown[]) => console.debug(line(message), ...rest),
    info: (message: string, ...rest: unknown[]) => console.log(line(message), ...rest),
    warn: (message: string, ...rest: unknown[]) => console.warn(line(message), ...rest),
    error: (message: string, ...rest: unknown[]) => console.error(line(message), ...rest),
  };
}
