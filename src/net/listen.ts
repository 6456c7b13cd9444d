import type { Server } from 'node:net';

/**
 * Listens, or rejects naming the setting the port came from: Node's own error
 * ("listen EADDRINUSE: address already in use 0.0.0.0:8080") does not say which to change.
 */
export function listenOn(server: Server, port: number, host: string, setting: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const refused = (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'is taken by another process; set it to a free port' : err.code === 'EACCES' ? 'needs privileges this process lacks; set it to a port above 1023' : `cannot be listened on: ${err.message}`;
      reject(new Error(`${setting}: port ${port} on ${host} ${why}`, { cause: err }));
    };
    server.once('error', refused);
    server.listen(port, host, () => {
      server.off('error', refused);
      resolve();
    });
  });
}
