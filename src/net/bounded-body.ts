import type { Readable } from 'node:stream';

/** A body past its bound: the stream was destroyed, what came is dropped. */
export class BodyTooLargeError extends Error {}

/**
 * The whole body of `stream`, held in memory, at most `maxBytes`: past them the stream is
 * destroyed and the promise rejects with BodyTooLargeError (a peer's 1 GiB is never read).
 */
export function readBounded(stream: Readable, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      stream.destroy();
      reject(new BodyTooLargeError(`exceeds ${maxBytes / 1024 / 1024} MiB`));
    });
    stream.on('error', reject);
    stream.on('end', () => resolve(Buffer.concat(chunks)));
  });
}
