// Where a worker thread's compiled file is. Workers run compiled JavaScript, from dist/; tests run
// the rest from source, so from <folder>/ the file is looked for in dist/<folder>/ above it.
import { existsSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** The compiled worker `file` beside the module at `metaUrl`, or in the same folder under dist/ above it. */
export function builtWorker(metaUrl: string, file: string): string {
  const here = dirname(fileURLToPath(metaUrl));
  const beside = join(here, file);
  if (existsSync(beside)) return beside;
  let dir = dirname(here);
  for (let depth = 0; depth < 4; depth++) {
    const candidate = join(dir, "dist", relative(dir, here), file);
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`worker ${file} not built: run "npm run build" first`);
}
