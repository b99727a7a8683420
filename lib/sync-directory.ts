// fsync of a directory: what makes a file's creation, rename or removal in it survive a power
// cut. fsync of the file itself covers only its contents.
import { closeSync, fsyncSync, openSync } from "node:fs";
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
