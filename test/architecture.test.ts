import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.join(__dirname, '..', '..');
const src = path.join(root, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? sources(file) : file.endsWith('.ts') ? [file] : [];
  });
}

/** A file's part of the house: its folder under src/, or the file itself at src/'s top. */
const partOf = (file: string): string => path.relative(src, file).split(path.sep)[0]!.replace(/\.ts$/, '');

/** The file a relative import names (a folder means its index). */
function resolved(from: string, specifier: string): string | undefined {
  const target = path.resolve(path.dirname(from), specifier);
  for (const file of [`${target}.ts`, path.join(target, 'index.ts')]) if (existsSync(file)) return file;
  return undefined;
}

/** Which parts each part imports, with one import that shows it. */
function partImports(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sources(src)) {
    const text = readFileSync(file, 'utf8');
    // Import and re-export statements only (not import-shaped text inside template strings of generated code).
    for (const [, specifier] of text.matchAll(/^(?:import|export)\s[^'"`]*?from\s+'(\.[^']+)'/gm)) {
      const target = resolved(file, specifier!);
      if (!target || !target.startsWith(src)) continue;
      const [from, to] = [partOf(file), partOf(target)];
      if (from === to) continue;
      const edges = graph.get(from) ?? new Map<string, string>();
      if (!edges.has(to)) edges.set(to, `${path.relative(root, file)} -> ${specifier}`);
      graph.set(from, edges);
    }
  }
  return graph;
}

describe('the shape of src/', function () {
  it('has no loop between its parts: each folder imports only what stands below it', function () {
    const graph = partImports();
    const loops: string[] = [];
    for (const [part, edges] of graph) {
      for (const [to, example] of edges) {
        // A path back from `to` to `part` closes a loop through this import.
        const seen = new Set<string>();
        const stack = [to];
        while (stack.length) {
          const at = stack.pop()!;
          if (at === part) {
            loops.push(`${part} -> ${to} (${example}) and back`);
            break;
          }
          if (seen.has(at)) continue;
          seen.add(at);
          stack.push(...(graph.get(at)?.keys() ?? []));
        }
      }
    }
    assert.ok(graph.size > 10, `read ${graph.size} parts`);
    assert.deepEqual(loops, []);
  });

  it('walks a delivery down: api -> ingest -> workflows -> activities, never back', function () {
    const graph = partImports();
    const reaches = (from: string, to: string): boolean => {
      const seen = new Set<string>();
      const stack = [from];
      while (stack.length) {
        const at = stack.pop()!;
        if (at === to) return true;
        if (!seen.has(at)) (seen.add(at), stack.push(...(graph.get(at)?.keys() ?? [])));
      }
      return false;
    };
    const down = ['main', 'platform', 'api', 'ingest', 'workflows', 'activities', 'isolates', 'delivery-log'];
    for (let i = 0; i + 1 < down.length; i++) assert.ok(reaches(down[i]!, down[i + 1]!), `${down[i]} reaches ${down[i + 1]}`);
    for (let i = 1; i < down.length; i++) for (let j = 0; j < i; j++) assert.ok(!reaches(down[i]!, down[j]!), `${down[i]} must not reach ${down[j]}`);
  });
});
