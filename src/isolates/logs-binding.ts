import type { IntegrationLogSink, LogSource } from '../integration-logs/log-sink';
import { MAX_SEND_BYTES } from './runtime-host';
import { readBounded } from '../net/bounded-body';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NodeService } from './workerd-process';

/**
 * The `platformLogs` binding of one installation's isolate: the host's console lines,
 * POSTed as JSON, go to the sink under the source the platform gave this binding, so that
 * no line can be written to another installation's log whatever the code sends. Code can
 * reach the binding itself (`cloudflare:workers`' env): a send past its installation's
 * rate is refused before its body is read, and a body past MAX_SEND_BYTES is cut off.
 */
export function logsBinding(sink: IntegrationLogSink, source: LogSource): NodeService {
  return (req, res) => {
    if (!sink.admitsSend(source)) {
      res.writeHead(429).end();
      return void req.destroy();
    }
    takeSend(req, res, (body) => sink.accept(source, body));
  };
}

/**
 * Reads a send of log lines (JSON, at most MAX_SEND_BYTES: past it the request is cut
 * off with a 413) and hands it to `accept`; answers 204, or 400 for what is not JSON.
 */
export function takeSend(req: IncomingMessage, res: ServerResponse, accept: (body: unknown) => void): void {
  readBounded(req, MAX_SEND_BYTES).then(
    (bytes) => {
      let body: unknown;
      try {
        body = JSON.parse(bytes.toString('utf8'));
      } catch {
        return void res.writeHead(400).end();
      }
      accept(body);
      res.writeHead(204).end();
    },
    () => res.writeHead(413).end(),
  );
}
