import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { registry } from './index';
import { listenOn } from '../net/listen';

/** The worker's `/metrics` (PLATFORM_WORKER_METRICS_PORT), for Prometheus on the worker's network. */
export async function serveMetrics(port: number, host = '0.0.0.0'): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found","message":"only GET /metrics here","details":[]}');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"internal","message":"Internal server error","details":[]}'),
    );
  });
  await listenOn(server, port, host, 'PLATFORM_WORKER_METRICS_PORT');
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
