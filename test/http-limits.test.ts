import assert from 'node:assert/strict';
import net from 'node:net';
import { TestPlatform } from './support/platform';

/** What a raw connection to the API gets: the answer's status line and body, and when the API closed it (ms after the start). */
function exchange(url: string, send: (socket: net.Socket) => void): Promise<{ status: number; body: any; closedAfterMs: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(Number(port), hostname, () => send(socket));
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, body = ''] = received.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1] ?? 0), body: body ? JSON.parse(body) : undefined, closedAfterMs: Date.now() - started });
    });
  });
}

describe('the API bounds what clients send, and says so in its error shape', function () {
  this.timeout(60_000);
  const platform = new TestPlatform(__filename, { worker: false, httpLimits: { headersMs: 1000, requestMs: 2000, connectionsPerClient: 4 } });

  before(() => platform.start());
  after(() => platform.stop());

  it('answers a request line and headers over 16 KiB 431, and a request target over 8 KiB 414, each as JSON', async function () {
    const huge = await exchange(platform.api.url, (socket) => socket.write(`GET /v1/integrations/${'x'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
    assert.equal(huge.status, 431);
    assert.deepEqual(huge.body, { error: 'request_header_fields_too_large', message: 'the request line and headers exceed 16 KiB', details: [] });
    // Raw connections throughout, each closed after its answer: the last test counts this address's connections.
    const long = await exchange(platform.api.url, (socket) => socket.write(`GET /v1/integrations/${'x'.repeat(10_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    assert.deepEqual([long.status, long.body.error], [414, 'uri_too_long']);
    const garbled = await exchange(platform.api.url, (socket) => socket.write('NOT HTTP\r\n\r\n'));
    assert.deepEqual([garbled.status, garbled.body.error], [400, 'invalid_request']);
  });

  it('cuts off a client that sends its headers, or its body, too slowly: 408 in the error shape, the connection closed', async function () {
    const slowHeaders = await exchange(platform.api.url, (socket) => socket.write('GET /livez HTTP/1.1\r\nHost: x\r\n'));
    assert.deepEqual([slowHeaders.status, slowHeaders.body.error], [408, 'request_timeout']);
    const slowBody = await exchange(platform.api.url, (socket) => {
      socket.write(`POST /v1/orgs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
      // A byte a while, never the whole body: the headers' limit is met, the request's is not.
      const drip = setInterval(() => socket.writable && socket.write(' '), 300);
      socket.once('close', () => clearInterval(drip));
    });
    assert.deepEqual([slowBody.status, slowBody.body.error], [408, 'request_timeout']);
    assert.ok(slowBody.closedAfterMs >= 2000, `closed after ${slowBody.closedAfterMs} ms, before the request's limit`);
  });

  it('holds at most so many connections from one address: the next is answered 429, the others still served', async function () {
    const held = await Promise.all(Array.from({ length: 4 }, () => new Promise<net.Socket>((resolve) => {
      const socket = net.connect(Number(new URL(platform.api.url).port), '127.0.0.1', () => resolve(socket));
    })));
    try {
      const over = await exchange(platform.api.url, (socket) => socket.write('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n'));
      assert.deepEqual([over.status, over.body.error], [429, 'too_many_connections']);
      const served = await new Promise<string>((resolve) => {
        let answer = '';
        held[0]!.on('data', (chunk) => (answer += chunk.toString()) && answer.includes('\r\n\r\n') && resolve(answer));
        held[0]!.write('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n');
      });
      assert.match(served, /^HTTP\/1\.1 200 /);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });
});
