// The version printed by --version and published in `info`: read from package.json at run time.
import { findPackage } from "../lib/package-root.js";

export function packageVersion(): string {
  const v = findPackage(import.meta.url)?.pkg.version;
  return typeof v === "string" ? v : "unknown";
}
