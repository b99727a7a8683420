// A spool queue's segment files read back at start (spool-queue.ts has the format), salvaging
// what is damaged: the records each file still holds, the ids lost to the damage, the files moved
// aside. The running queue is spool-queue.ts's; this is its start, a job of its own.
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync } from "node:fs";
import { join } from "node:path";
import { MIN_RECORD_BYTES, readHead, rewriteSegment, scanSegment, truncateSegment } from "./spool-record.js";

export interface Segment {
  firstId: number;
  file: string;
  bytes: number;
  count: number;
  /** the highest id in the segment (firstId - 1 while empty) */
  lastId: number;
  /** ids within [firstId, lastId] lost to damage found at start: not in the file, never acked */
  holes: Range[];
}

/** ids from..to, inclusive */
export type Range = [number, number];

export const countIn = (ranges: readonly Range[], from: number, to: number): number => ranges.reduce((n, [a, b]) => n + Math.max(0, Math.min(b, to) - Math.max(a, from) + 1), 0);

export interface Salvaged {
  segments: Segment[];
  /** ids lost to damage above the acknowledged mark, in order */
  missing: Range[];
  /** the highest id a file holds, or skipped for damage (at least the acknowledged mark) */
  maxId: number;
  /** records lost to damage (QueueOpenReport.lost) */
  lost: number;
  /** each damaged file moved aside, in words */
  quarantined: string[];
  /** an incomplete last record (a write cut short by a crash) was cut off */
  tornTail: boolean;
}

/** Reads the queue's segment files in `dir`, the acknowledged mark being `ackedId`. */
export function salvageSegments(dir: string, quarantineDir: string, ackedId: number, maxSegmentFileBytes: number): Salvaged {
  const out: Salvaged = { segments: [], missing: [], maxId: 0, lost: 0, quarantined: [], tornTail: false };
  const segments = out.segments;
  const missing = out.missing;
  const names = readdirSync(dir)
    .filter((n) => /^\d{16}\.seg$/.test(n))
    .sort();
  let maxId = ackedId;
  /** the last id seen, across segments in order: a jump past it is a run of lost records */
  let prev = ackedId;
  const lose = (from: number, to: number, seg: Segment | null): void => {
    const a = Math.max(from, ackedId + 1); // what was acknowledged is not lost
    if (a > to) return;
    missing.push([a, to]);
    seg?.holes.push([a, to]);
    out.lost += to - a + 1;
  };
  names.forEach((name, k) => {
    const file = join(dir, name);
    const firstId = Number(name.slice(0, 16));
    const isNewest = k === names.length - 1;
    // A file larger than a segment can grow is damage: read only that far (past 2 GiB it cannot
    // be read whole: it threw, issue #54), the rest damage to its end, the file moved aside.
    chmodSync(file, 0o600); // a file from before modes were set
    const size = statSync(file).size;
    const oversize = size > maxSegmentFileBytes ? size : null;
    const buf = oversize === null ? readFileSync(file) : readHead(file, maxSegmentFileBytes);
    const scan = scanSegment(buf, isNewest && oversize === null);
    if (oversize !== null) {
      if (scan.damagedTail === 0) scan.damage.push(`${oversize} bytes, past the ${maxSegmentFileBytes} a segment can hold: read to there only`);
      else scan.damage[scan.damage.length - 1] += ` (the file is ${oversize} bytes, past the ${maxSegmentFileBytes} a segment can hold: read to there only)`;
      scan.damagedTail = oversize - scan.end;
    }
    if (scan.torn) {
      // a crash cut the last write short: keep what is whole (that record was never sent: a
      // record is sent only once it is on file, so its id may be given out again)
      out.tornTail = true;
      truncateSegment(file, scan.end);
    }
    let bytes = scan.end;
    if (scan.damage.length > 0) {
      mkdirSync(quarantineDir, { recursive: true, mode: 0o700 });
      const aside = join(quarantineDir, `${Date.now()}-${name}`);
      if (oversize === null) copyFileSync(file, aside);
      else renameSync(file, aside);
      bytes = rewriteSegment(file, scan.records, dir);
      out.quarantined.push(`${file}: ${scan.damage.join("; ")}; ${scan.records.length} intact records kept; the original ${oversize === null ? "copied" : "moved"} to ${aside}`);
    }
    const seg: Segment = { firstId, file, bytes, count: scan.records.length, lastId: firstId - 1, holes: [] };
    for (const r of scan.records) {
      // a jump in ids: below this segment's first id, the end of an earlier segment (or a whole
      // file) was lost; from it on, records of this one
      if (r.id > prev + 1) {
        lose(prev + 1, Math.min(r.id, firstId) - 1, null);
        lose(Math.max(prev + 1, firstId), r.id - 1, seg);
      }
      prev = Math.max(prev, r.id); // (an id not above the last is from an older layout: kept, no gap)
      seg.lastId = Math.max(seg.lastId, r.id);
    }
    if (isNewest && prev < firstId - 1) {
      // ids before the newest file's first that no file holds (a file gone missing)
      lose(prev + 1, firstId - 1, null);
      prev = firstId - 1;
    }
    if (isNewest && scan.damagedTail > 0) {
      // the damage reached the end of the newest file: nothing says how many records it held,
      // so as many ids as it could have held are skipped, and counted lost
      const skip = Math.ceil(scan.damagedTail / MIN_RECORD_BYTES);
      const from = Math.max(prev, firstId - 1) + 1;
      lose(from, from + skip - 1, seg);
      prev = from + skip - 1;
      seg.lastId = Math.max(seg.lastId, prev);
    }
    maxId = Math.max(maxId, seg.lastId, firstId - 1);
    segments.push(seg);
  });
  out.maxId = maxId;
  return out;
}
