// The version printed by --version and published in `info`: read from package.json at run time;
// and the commit the build was made from (dist/build-info.json, scripts/build-info.mjs). Each is
// read once per process: a build does not change under a running daemon.
import { join } from "node:path";
import { readTextBounded } from "../lib/bounded-read.js";
import { findPackage } from "../lib/package-root.js";

/** What a build says of itself: the version it was packaged as, and its commit ("-dirty" if the tree had changes). */
export interface BuildInfo {
  version: string | null;
  commit: string | null;
}

/** The build-info.json of the build installed at `packageDir` (its dist/); null when absent or unreadable. */
export function readBuildInfo(packageDir: string): BuildInfo | null {
  let b: { commit?: unknown; dirty?: unknown; version?: unknown };
  try {
    b = JSON.parse(readTextBounded(join(packageDir, "dist", "build-info.json"))) as typeof b;
  } catch {
    return null;
  }
  return {
    version: typeof b.version === "string" ? b.version : null,
    commit: typeof b.commit === "string" ? `${b.commit}${b.dirty === true ? "-dirty" : ""}` : null,
  };
}

let own: { info: BuildInfo | null; version: string } | null = null;

function ownBuild(): { info: BuildInfo | null; version: string } {
  if (own === null) {
    const found = findPackage(import.meta.url);
    const info = found === null ? null : readBuildInfo(found.dir);
    const v = found?.pkg.version;
    own = { info, version: info?.version ?? (typeof v === "string" ? v : "unknown") };
  }
  return own;
}

/** The version: the Debian package's where it was packaged (its build-info.json), else package.json's. */
export function packageVersion(): string {
  return ownBuild().version;
}

/** The build's commit, with "-dirty" if the tree had changes then; null when unknown. */
export function buildCommit(): string | null {
  return ownBuild().info?.commit ?? null;
}

/** What --version prints: the version and the commit. */
export function versionLine(): string {
  const commit = buildCommit();
  return `podwarden ${packageVersion()} (${commit === null ? "commit unknown: built outside a git checkout" : `commit ${commit}`})`;
}
