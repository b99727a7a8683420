// The version printed by --version and published in `info`: read from package.json at run time;
// and the commit the build was made from (dist/build-info.json, scripts/build-info.mjs).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { findPackage } from "../lib/package-root.js";

/** The version: the Debian package's where it was packaged (its build-info.json), else package.json's. */
export function packageVersion(): string {
  const packaged = buildInfo()?.version;
  if (typeof packaged === "string") return packaged;
  const v = findPackage(import.meta.url)?.pkg.version;
  return typeof v === "string" ? v : "unknown";
}

function buildInfo(): { commit?: unknown; dirty?: unknown; version?: unknown } | null {
  const dir = findPackage(import.meta.url)?.dir;
  if (dir === undefined) return null;
  try {
    return JSON.parse(readFileSync(join(dir, "dist", "build-info.json"), "utf8")) as { commit?: unknown; dirty?: unknown; version?: unknown };
  } catch {
    return null;
  }
}

/** The build's commit, with "-dirty" if the tree had changes then; null when unknown. */
export function buildCommit(): string | null {
  const info = buildInfo();
  return typeof info?.commit === "string" ? `${info.commit}${info.dirty === true ? "-dirty" : ""}` : null;
}

/** What --version prints: the version and the commit. */
export function versionLine(): string {
  const commit = buildCommit();
  return `podwarden ${packageVersion()} (${commit === null ? "commit unknown: built outside a git checkout" : `commit ${commit}`})`;
}
