import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';

export type Segment = string | number;

/** `configurations.account.properties.url.type`, with `[i]` for list items. */
export function formatPath(path: readonly Segment[]): string {
  return path.map((segment, i) => (typeof segment === 'number' ? `[${segment}]` : i === 0 ? segment : `.${segment}`)).join('') || '(root)';
}

/** The manifest's YAML with positions kept, so every issue can name its line and column. */
export class ManifestSource {
  readonly doc: Document.Parsed;
  private readonly lines = new LineCounter();

  constructor(readonly text: string) {
    this.doc = parseDocument(text, { lineCounter: this.lines, uniqueKeys: true, prettyErrors: false });
  }

  position(offset: number): { line: number; column: number } {
    const { line, col } = this.lines.linePos(offset);
    return { line, column: col };
  }

  /**
   * Where the node at `path` starts (its key's position with `key`). Where the path leaves
   * the document (a missing key), the key or list item of the nearest ancestor that exists.
   */
  locate(path: readonly Segment[], key = false): { line: number; column: number } {
    let node: unknown = this.doc.contents;
    let offset = (node as { range?: number[] } | null)?.range?.[0] ?? 0;
    let ancestor = offset;
    for (let i = 0; i < path.length; i++) {
      const segment = path[i];
      if (isMap(node)) {
        const pair = node.items.find((item) => (isScalar(item.key) ? item.key.value : item.key) === segment);
        if (!pair) return this.position(ancestor);
        const keyOffset = (pair.key as { range?: number[] }).range?.[0] ?? offset;
        if (key && i === path.length - 1) return this.position(keyOffset);
        node = pair.value;
        ancestor = keyOffset;
        offset = (node as { range?: number[] } | null)?.range?.[0] ?? keyOffset;
      } else if (isSeq(node) && typeof segment === 'number' && node.items[segment]) {
        node = node.items[segment];
        offset = (node as { range?: number[] }).range?.[0] ?? offset;
        ancestor = offset;
      } else {
        return this.position(ancestor);
      }
    }
    return this.position(offset);
  }
}
