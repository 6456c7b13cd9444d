import type { Server } from 'node:net';

/**
 * Listens, or rejects naming the setting the port came from: Node's own error
 * ("listen EADDRINUSE: address already in use 0.0.0.0:8080") does not say which to change.
 */
export function listenOn(server: Server, port: number, host: string, setting: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'is taken by another process' : err.code === 'EACCES' ? 'needs privileges this process lacks' : `cannot be listened on (${err.message})`;
      reject(new Error(`${setting}: port ${port} on ${host} ${why}; set ${setting} to a free port`, { cause: err }));
    });
    server.listen(port, host, resolve);
  });
}
