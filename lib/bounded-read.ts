// Reading a file with a size limit checked before anything parses it. A config, state or key
// file is a few KB; one of hundreds of MB (a mistake, a full disk's garbage, an attack through
// a writable directory) would otherwise be read whole and handed to a parser on the main thread,
// where the leak path runs. The limit is checked while reading, not from a stat taken before,
// so a file that grows meanwhile cannot slip past it.
import { closeSync, openSync, readSync } from "node:fs";

/** The largest config, state or credential file podwarden reads. */
export const MAX_SMALL_FILE_BYTES = 1024 * 1024;

export function readFileBounded(path: string, maxBytes: number = MAX_SMALL_FILE_BYTES): Buffer {
  const fd = openSync(path, "r");
  try {
    // one byte over the limit tells a file at the limit from a larger one
    const buf = Buffer.allocUnsafe(maxBytes + 1);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
      if (n > maxBytes) throw new Error(`larger than the ${maxBytes}-byte limit for this file`);
    }
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

export function readTextBounded(path: string, maxBytes: number = MAX_SMALL_FILE_BYTES): string {
  return readFileBounded(path, maxBytes).toString("utf8");
}

/**
 * A fetch() answer's body as text, read only up to maxBytes: a larger one is cancelled unread
 * past the limit and refused (an answer's Content-Length is not trusted; the bytes are counted).
 */
export async function readResponseBounded(res: Response, maxBytes: number): Promise<string> {
  if (res.body === null) return "";
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const r: { done: boolean; value?: Uint8Array } = await reader.read();
    if (r.done || r.value === undefined) break;
    const value = r.value;
    n += value.byteLength;
    if (n > maxBytes) {
      await reader.cancel();
      throw new Error(`answer larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
