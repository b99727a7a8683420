// Temporary directories that tests make, removed when their file ends (test/helpers/temp-dirs-setup.ts,
// a vitest setup file): a test must not leave its configs, state and pty links behind in /tmp.
// Each vitest worker tracks its own file's directories, so files running in parallel lanes never
// remove each other's.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

/** A fresh directory under the system's temporary directory, removed after this test file. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every directory tempDir made so far. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
