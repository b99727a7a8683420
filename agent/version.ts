// The version printed by --version and published in `info`: read from package.json at run time.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 4; depth++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "podwarden" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // not here: look one level up
    }
    dir = dirname(dir);
  }
  return "unknown";
}
