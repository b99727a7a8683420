// Where the podwarden package is installed: the directory of its package.json, found by walking
// up from a module (sources under tests, compiled files under dist/ in production).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** podwarden's package.json above the module at `metaUrl`, parsed, with its directory; null if none within 4 levels. */
export function findPackage(metaUrl: string): { dir: string; pkg: { name: string; version?: unknown } } | null {
  let dir = dirname(fileURLToPath(metaUrl));
  for (let depth = 0; depth < 4; depth++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown; version?: unknown };
      if (pkg.name === "podwarden") return { dir, pkg: { name: pkg.name, version: pkg.version } };
    } catch {
      // not here: look one level up
    }
    dir = dirname(dir);
  }
  return null;
}
