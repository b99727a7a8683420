// fsync of a directory: what makes a file's creation, rename or removal in it survive a power
// cut. fsync of the file itself covers only its contents. And the file put in place whole.
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";

export function syncDirectory(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** syncDirectory() on libuv's thread pool, off the event loop. */
export async function syncDirectoryInBackground(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Puts `data` in place of `file`: written to `<file>.tmp` (0600), synced and renamed over it, so
 * a crash leaves the old file or the new one, never half of one. The rename survives a power cut
 * once the directory is synced (syncDirectory), which the caller does, once for all it renamed.
 */
export function replaceFile(file: string, data: string | Buffer): void {
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    // one call, two overloads
    if (typeof data === "string") writeSync(fd, data);
    else writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}
