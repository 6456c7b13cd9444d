import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP forwarder on 127.0.0.1 that a test can take away, as a network would take a
 * database server away: `refuse()` ends every connection and closes the port (new ones are
 * refused), `silence()` accepts connections and never answers (packets dropped), `restore()`
 * forwards again on the same port.
 */
export class TcpProxy {
  port = 0;
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private mode: 'forward' | 'silent' = 'forward';

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<this> {
    this.mode = 'forward';
    this.server = net.createServer((client) => {
      this.track(client);
      if (this.mode === 'silent') return;
      const upstream = this.track(net.connect(this.targetPort, this.targetHost));
      client.pipe(upstream).pipe(client);
      // One side gone ends the other, as the one connection it stands for.
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => this.server!.once('error', reject).listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Ends every connection and stops listening: connecting is refused. */
  async refuse(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
    this.dropConnections();
    await closed;
  }

  /** Ends every connection; new ones are accepted and never answered. */
  silence(): void {
    this.mode = 'silent';
    this.dropConnections();
  }

  async restore(): Promise<void> {
    if (this.server?.listening) {
      this.mode = 'forward';
      this.dropConnections(); // the silent ones
      return;
    }
    await this.start();
  }

  async stop(): Promise<void> {
    await this.refuse();
  }

  private dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  private track(socket: net.Socket): net.Socket {
    this.sockets.add(socket);
    socket.on('error', () => socket.destroy()).on('close', () => this.sockets.delete(socket));
    return socket;
  }
}
