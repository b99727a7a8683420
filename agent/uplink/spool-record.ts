// One record of a spool queue's segment files: [u32 length][u32 CRC-32 of the payload][payload],
// the payload a record's JSON; its encoding, and the reading of a whole segment back at start,
// past damage, and the rewrite of a damaged one (spool-queue.ts says what the queue does with what
// is found).
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { crc32 } from "node:zlib";
import { replaceFile, syncDirectory } from "../../lib/sync-directory.js";

export const HEADER = 8;
export const MAX_RECORD = 1 << 20;

export interface SpoolRecord {
  id: number;
  /** wall-clock ms when the record was made: replay order across queues */
  ts: number;
  topic: string;
  /** the message body: JSON object text */
  body: string;
}

/** The smallest record: an 8-byte header and {"id":1,"ts":0,"topic":"","body":""}. */
export const MIN_RECORD_BYTES = HEADER + 36;
const RECORD_START = Buffer.from('{"id":');

export interface SegmentScan {
  records: SpoolRecord[];
  /** where the intact data ends (the file's length unless torn or damaged at the end) */
  end: number;
  /** what was damaged, where, and how much was skipped */
  damage: string[];
  /** bytes of damage at the end of the file with no intact record after them */
  damagedTail: number;
  torn: boolean;
}

/**
 * Reads every intact record of a segment. Past damage it resynchronises on the next offset
 * where a whole record decodes (its length in bounds, its CRC-32 right, its JSON a record with a
 * higher id than the last one read): a false match would need a CRC collision on a payload that
 * also parses as a record. Candidates are found by the payload's fixed start, `{"id":`, so a
 * damaged megabyte costs one native search, not a CRC per byte.
 */
export function scanSegment(buf: Buffer, isNewest: boolean): SegmentScan {
  const out: SegmentScan = { records: [], end: 0, damage: [], damagedTail: 0, torn: false };
  let off = 0;
  for (;;) {
    const d = decodeAt(buf, off);
    if ("end" in d) break;
    if ("record" in d) {
      const prev = out.records[out.records.length - 1];
      if (prev === undefined || d.record.id > prev.id) {
        out.records.push(d.record);
        off = d.next;
        continue;
      }
    }
    const resume = resync(buf, off + 1, out.records[out.records.length - 1]?.id ?? 0);
    if (resume === null) {
      // nothing intact after it: a write a crash cut short, if this is the newest file and what is
      // left is one record's start; anything else is damage that reaches the end of the file
      if ("torn" in d && isNewest) out.torn = true;
      else {
        out.damage.push(`${damageAt(d, off, "truncated record")}, to the end of the file (${buf.length - off} bytes)`);
        out.damagedTail = buf.length - off;
      }
      break;
    }
    out.damage.push(`${damageAt(d, off, "bad record length")} (${resume - off} bytes skipped)`);
    off = resume;
  }
  out.end = off;
  return out;
}

/** What is wrong with the record at off; `torn` names a length that runs past the end of the file. */
function damageAt(d: Exclude<Decoded, { end: true }>, off: number, torn: string): string {
  if ("corrupt" in d) return d.corrupt;
  if ("record" in d) return `record ${d.record.id} out of order at offset ${off}`;
  return `${torn} at offset ${off}`;
}

/** The next offset at or after `from` where a whole record with an id above minId starts, or null. */
function resync(buf: Buffer, from: number, minId: number): number | null {
  for (let p = buf.indexOf(RECORD_START, from + HEADER); p >= 0; p = buf.indexOf(RECORD_START, p + 1)) {
    const d = decodeAt(buf, p - HEADER);
    if ("record" in d && d.record.id > minId) return p - HEADER;
  }
  return null;
}

export function encodeRecord(r: SpoolRecord): Buffer {
  const payload = Buffer.from(JSON.stringify(r), "utf8");
  const out = Buffer.allocUnsafe(HEADER + payload.length);
  out.writeUInt32LE(payload.length, 0);
  out.writeUInt32LE(crc32(payload), 4);
  payload.copy(out, HEADER);
  return out;
}

type Decoded = { record: SpoolRecord; next: number } | { end: true } | { torn: true } | { corrupt: string };

export function decodeAt(buf: Buffer, off: number): Decoded {
  if (off === buf.length) return { end: true };
  if (off + HEADER > buf.length) return { torn: true };
  const len = buf.readUInt32LE(off);
  if (len === 0 || len > MAX_RECORD) return { corrupt: `record length ${len} at offset ${off}` };
  if (off + HEADER + len > buf.length) return { torn: true };
  const payload = buf.subarray(off + HEADER, off + HEADER + len);
  if (crc32(payload) !== buf.readUInt32LE(off + 4)) return { corrupt: `CRC mismatch at offset ${off}` };
  let r: SpoolRecord;
  try {
    r = JSON.parse(payload.toString("utf8")) as SpoolRecord;
  } catch {
    return { corrupt: `unparseable record at offset ${off}` };
  }
  if (!Number.isSafeInteger(r.id) || typeof r.topic !== "string" || typeof r.body !== "string" || !Number.isFinite(r.ts)) return { corrupt: `record without id, topic or body at offset ${off}` };
  return { record: r, next: off + HEADER + len };
}

/** Replaces a damaged segment with its intact records, synced with its directory; returns its new length. */
export function rewriteSegment(file: string, records: readonly SpoolRecord[], dir: string): number {
  const clean = Buffer.concat(records.map(encodeRecord));
  replaceFile(file, clean);
  syncDirectory(dir);
  return clean.length;
}

/** Cuts a segment to its first `length` bytes (a torn last record cut off). */
export function truncateSegment(file: string, length: number): void {
  replaceFile(file, readFileSync(file).subarray(0, length));
}

/** The first `bytes` of a file (all of it if shorter). */
export function readHead(file: string, bytes: number): Buffer {
  const buf = Buffer.alloc(bytes);
  const fd = openSync(file, "r");
  try {
    let got = 0;
    while (got < bytes) {
      const n = readSync(fd, buf, got, bytes - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}
