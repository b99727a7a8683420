// Import cycles among the product's modules, type imports included: a cycle is two modules that
// cannot be read, tested or split one without the other. TypeScript's own pre-processor lists
// each file's imports (static, re-exports and import()); relative ones are resolved to files.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

/** The relative imports of one file's source, as repository paths (".js" read as ".ts"). */
export function importsOf(file: string, source: string): string[] {
  return ts
    .preProcessFile(source, true, true)
    .importedFiles.map((f) => f.fileName)
    .filter((n) => n.startsWith("."))
    .map((n) => relative(".", resolve(dirname(file), n.replace(/\.js$/, ".ts"))));
}

/** Every .ts file under `roots` (not declarations), skipping folders named in `skip`. */
export function tsFiles(roots: readonly string[], skip: readonly string[] = []): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const f of readdirSync(d)) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) {
        if (!skip.includes(f)) walk(p);
      } else if (p.endsWith(".ts") && !p.endsWith(".d.ts")) out.push(p);
    }
  };
  for (const r of roots) walk(r);
  return out;
}

/** The strongly connected groups of more than one module in `graph` (Tarjan's algorithm), each sorted. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** The import graph of the files under `roots`. */
export function importGraph(roots: readonly string[], skip: readonly string[] = []): Map<string, string[]> {
  return new Map(tsFiles(roots, skip).map((f) => [f, importsOf(f, readFileSync(f, "utf8"))]));
}
