import type { IntegrationLogSink, LogSource } from '../integration-logs/log-sink';
import type { NodeService } from './workerd-process';

/** A send of log lines at most: 500 lines of at most 4,096 characters, with room for their JSON. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The `platformLogs` binding of one installation's isolate: the host's console lines,
 * POSTed as JSON, go to the sink under the source the platform gave this binding, so that
 * no line can be written to another installation's log whatever the code sends.
 */
export function logsBinding(sink: IntegrationLogSink, source: LogSource): NodeService {
  return (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return void res.writeHead(413).end();
      try {
        sink.accept(source, JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        return void res.writeHead(400).end();
      }
      res.writeHead(204).end();
    });
  };
}
