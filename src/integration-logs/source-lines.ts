import { SourceMapConsumer, type RawSourceMap } from 'source-map-js';

/** Versions whose source maps are kept parsed (each is a few hundred KiB at most). */
const KEPT = 32;
/** A position in the bundle, as workerd's stacks give it. */
const BUNDLE_POSITION = /(?:file:\/\/\/)?integration\.js:(\d+):(\d+)/g;

/**
 * Names the positions of a version's bundle in a log line (a stack's frames) as the
 * integration's own source lines, from the source map its publish sent; a version without
 * one keeps the bundle's positions.
 */
export class SourceLines {
  private readonly maps = new Map<string, Promise<SourceMapConsumer | undefined>>();

  /** `load` answers a version's source map (JSON text), or undefined when it has none. */
  constructor(private readonly load: (integration: string, version: number) => Promise<string | undefined>) {}

  async name(integration: string, version: number, message: string): Promise<string> {
    if (!message.includes('integration.js:')) return message;
    const consumer = await this.consumerOf(integration, version);
    if (!consumer) return message;
    return message.replace(BUNDLE_POSITION, (position, line: string, column: string) => {
      const original = consumer.originalPositionFor({ line: Number(line), column: Number(column) - 1 });
      return original.source ? `${original.source}:${original.line}:${(original.column ?? 0) + 1}` : position;
    });
  }

  private consumerOf(integration: string, version: number): Promise<SourceMapConsumer | undefined> {
    const key = `${integration}@${version}`;
    let found = this.maps.get(key);
    if (!found) {
      found = this.load(integration, version).then((text) => (text ? new SourceMapConsumer(JSON.parse(text) as RawSourceMap) : undefined), () => undefined);
      this.maps.set(key, found);
      if (this.maps.size > KEPT) this.maps.delete(this.maps.keys().next().value!);
    }
    return found;
  }
}
