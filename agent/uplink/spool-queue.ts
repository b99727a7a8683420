// One on-disk queue of the store-and-forward spool: an append-only log in segment files.
//
//   <dir>/<firstId, 16 digits>.seg   records: [u32 length][u32 CRC-32 of the payload][payload]
//   <dir>/acked                      {"ackedId": n}: every id <= n reached the broker (PUBACK)
//
// Ids are this queue's sequence numbers: consecutive, and never reused across restarts (the
// newest segment is never deleted, and its name carries the next id when it is empty).
// A record is forgotten only once it, and every record before it, has been acknowledged; until
// `acked` is written again after a crash, some acknowledged records are sent a second time
// (at least once; consumers de-duplicate by sequence number).
//
// Reading follows the log from the oldest unacknowledged record to the tail, through the page
// cache, so the same path serves live sending and replay after an outage.
import { closeSync, fsync, fsyncSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { JsonStateFile } from "../../lib/json-state-file.js";
import { syncDirectory, syncDirectoryInBackground } from "../../lib/sync-directory.js";

const HEADER = 8;
const MAX_RECORD = 1 << 20;

export interface SpoolRecord {
  id: number;
  /** wall-clock ms when the record was made: replay order across queues */
  ts: number;
  topic: string;
  /** the message body: JSON object text */
  body: string;
}

interface Segment {
  firstId: number;
  file: string;
  bytes: number;
  count: number;
}

interface Pos {
  seg: number; // index into segments
  off: number;
}

export interface QueueOpenReport {
  /** records read back from before the restart that still await a PUBACK */
  pending: number;
  /** damaged files moved aside */
  quarantined: string[];
  /** an incomplete last record (a write cut short by a crash) that was cut off */
  tornTail: boolean;
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

function decodeAt(buf: Buffer, off: number): Decoded {
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

export class SpoolQueue {
  private segments: Segment[] = [];
  private fd: number | null = null;
  private nextId = 1;
  private ackedId = 0;
  private ackedStore: JsonStateFile<{ ackedId: number }>;
  private ackedSaved = 0;
  /** where the next record to send starts */
  private read: Pos = { seg: 0, off: 0 };
  /** records sent and awaiting their PUBACK */
  private readonly inflight = new Set<number>();
  private readonly ackedAhead = new Set<number>();
  private readCache: { seg: number; bytes: number; buf: Buffer } | null = null;
  /** the record last appended, where it starts in which segment: peek() need not decode it back */
  private appended: { seg: number; off: number; record: SpoolRecord; next: number } | null = null;
  /** what the last peek() decoded, at which read position (the object itself): take() needs no second decode */
  private peeked: { at: Pos; record: SpoolRecord; next: number } | null = null;
  /**
   * Descriptors holding records written since their last fsync: the newest segment's, and an
   * older segment's written up to its rollover (which stays open until its records are synced,
   * or they would reach the disk only whenever the kernel got round to it).
   */
  private readonly unsynced = new Set<number>();
  /** descriptors a background fsync is running on */
  private readonly syncing = new Set<number>();
  /** descriptors no longer written, closed once nothing waits to sync them */
  private readonly retired = new Set<number>();
  /** a segment file was created since the directory was last synced: its name is not yet durable */
  private dirUnsynced = false;
  /** records dropped by the overflow policy since start */
  dropped = 0;

  constructor(
    readonly dir: string,
    private readonly segmentBytes: number,
  ) {
    mkdirSync(dir, { recursive: true });
    this.ackedStore = new JsonStateFile(join(dir, "acked"), (d) => {
      const n = (d as { ackedId?: unknown } | null)?.ackedId;
      if (!Number.isSafeInteger(n) || (n as number) < 0) throw new Error("no ackedId");
      return { ackedId: n as number };
    });
  }

  /** Reads the queue back from disk, quarantining what is damaged. */
  open(quarantineDir: string): QueueOpenReport {
    const report: QueueOpenReport = { pending: 0, quarantined: [], tornTail: false };
    const acked = this.ackedStore.load();
    if (acked.problem !== undefined) report.quarantined.push(acked.problem);
    this.ackedId = acked.value?.ackedId ?? 0;
    this.ackedSaved = this.ackedId;
    const names = readdirSync(this.dir)
      .filter((n) => /^\d{16}\.seg$/.test(n))
      .sort();
    let maxId = this.ackedId;
    const salvaged: SpoolRecord[] = [];
    names.forEach((name, k) => {
      const file = join(this.dir, name);
      const firstId = Number(name.slice(0, 16));
      const buf = readFileSync(file);
      let off = 0;
      let count = 0;
      const good: SpoolRecord[] = [];
      for (;;) {
        const d = decodeAt(buf, off);
        if ("end" in d) break;
        if ("torn" in d) {
          if (k === names.length - 1) {
            // a crash cut the last write short: keep what is whole
            report.tornTail = true;
            this.truncate(file, off);
          } else {
            this.quarantineFile(file, quarantineDir, `truncated record at offset ${off}`, report, good, salvaged);
            return;
          }
          break;
        }
        if ("corrupt" in d) {
          this.quarantineFile(file, quarantineDir, d.corrupt, report, good, salvaged);
          return;
        }
        good.push(d.record);
        maxId = Math.max(maxId, d.record.id);
        count++;
        off = d.next;
      }
      maxId = Math.max(maxId, firstId - 1);
      this.segments.push({ firstId, file, bytes: off, count });
    });
    this.nextId = maxId + 1;
    if (this.segments.length === 0 || salvaged.length > 0) this.startSegment();
    else this.fd = openSync(this.segments[this.segments.length - 1].file, "a");
    // what a damaged file still held intact goes back in, at the tail, ids unchanged
    for (const r of salvaged) if (r.id > this.ackedId) this.write(r);
    this.releaseAcked();
    this.rewindToAcked();
    report.pending = this.pendingCount();
    return report;
  }

  private truncate(file: string, length: number): void {
    const keep = readFileSync(file).subarray(0, length);
    const tmp = `${file}.tmp`;
    const fd = openSync(tmp, "w");
    writeSync(fd, keep);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, file);
  }

  private quarantineFile(file: string, quarantineDir: string, why: string, report: QueueOpenReport, good: SpoolRecord[], salvaged: SpoolRecord[]): void {
    mkdirSync(quarantineDir, { recursive: true });
    const aside = join(quarantineDir, `${Date.now()}-${file.split("/").pop() ?? "segment"}`);
    renameSync(file, aside);
    report.quarantined.push(`${file}: ${why}; moved to ${aside} (${good.length} intact records before it kept)`);
    salvaged.push(...good);
  }

  /** Starts a new newest segment whose first record will be firstId. */
  private startSegment(firstId = this.nextId): void {
    const file = join(this.dir, `${String(firstId).padStart(16, "0")}.seg`);
    // open the new file before letting go of the old one: if the disk refuses, writing goes on
    // (or fails) on the old segment, never on a closed descriptor
    const fd = openSync(file, "a");
    if (this.fd !== null) this.retire(this.fd);
    this.fd = fd;
    this.dirUnsynced = true;
    this.segments.push({ firstId, file, bytes: statSync(file).size, count: 0 });
  }

  private write(r: SpoolRecord): void {
    const rec = encodeRecord(r);
    let last = this.segments[this.segments.length - 1];
    if (last.bytes > 0 && last.bytes + rec.length > this.segmentBytes) {
      this.startSegment(r.id);
      last = this.segments[this.segments.length - 1];
      this.releaseAcked();
    }
    // a full disk can take part of a record: cut it off again, so the file never holds half a
    // record for the reader to trip over (found by the full-disk test)
    let written = 0;
    try {
      written = writeSync(this.fd as number, rec);
    } finally {
      if (written !== rec.length) ftruncateSync(this.fd as number, last.bytes);
    }
    if (written !== rec.length) throw new Error(`ENOSPC: only ${written} of ${rec.length} bytes written`);
    // a live record is sent right after it is written: the reader takes it from here rather than
    // reading back from disk what was just written there (three system calls and a decode each)
    this.appended = { seg: this.segments.length - 1, off: last.bytes, record: r, next: last.bytes + rec.length };
    last.bytes += rec.length;
    last.count++;
    this.unsynced.add(this.fd as number);
  }

  /** Appends a record; returns its id (this queue's sequence number). Throws if the disk refuses. */
  append(ts: number, topic: string, body: string): number {
    const id = this.nextId;
    this.write({ id, ts, topic, body });
    this.nextId++; // only once it is on file: a failed write leaves no gap in the numbering
    return id;
  }

  /** The id the next append will get. */
  get peekNextId(): number {
    return this.nextId;
  }

  get bytes(): number {
    return this.segments.reduce((s, x) => s + x.bytes, 0);
  }

  /** Records not yet acknowledged (sent or not). */
  pendingCount(): number {
    return this.segments.reduce((s, x) => s + x.count, 0) - this.countAckedInSegments();
  }

  private countAckedInSegments(): number {
    const first = this.segments[0];
    if (first === undefined) return 0;
    return Math.max(0, Math.min(this.ackedId - first.firstId + 1, first.count));
  }

  /** The next record to send, without taking it. */
  peek(): SpoolRecord | undefined {
    for (;;) {
      const seg = this.segments[this.read.seg];
      if (seg === undefined) return undefined;
      if (this.read.off >= seg.bytes) {
        if (this.read.seg === this.segments.length - 1) return undefined;
        this.read = { seg: this.read.seg + 1, off: 0 };
        continue;
      }
      const a = this.appended;
      const d = a !== null && a.seg === this.read.seg && a.off === this.read.off ? a : decodeAt(this.segmentBuffer(this.read.seg), this.read.off);
      if (!("record" in d)) throw new Error(`spool segment ${seg.file} changed under the reader at ${this.read.off}`);
      if (d.record.id <= this.ackedId || this.ackedAhead.has(d.record.id)) {
        this.read = { seg: this.read.seg, off: d.next };
        continue;
      }
      this.peeked = { at: this.read, record: d.record, next: d.next };
      return d.record;
    }
  }

  /** Takes the record peek() returned: it is now in flight until ack() or rewind(). */
  take(r: SpoolRecord): void {
    // every move of the read position makes a new Pos, so an unmoved one is the same object
    const p = this.peeked;
    let next: number;
    if (p !== null && p.at === this.read && p.record.id === r.id) {
      next = p.next;
    } else {
      const d = decodeAt(this.segmentBuffer(this.read.seg), this.read.off);
      if (!("record" in d) || d.record.id !== r.id) throw new Error("take() without a matching peek()");
      next = d.next;
    }
    this.peeked = null;
    this.read = { seg: this.read.seg, off: next };
    this.inflight.add(r.id);
  }

  /**
   * The segment's bytes as far as written. The newest segment grows while it is read, so only
   * what was appended since the last read is read (into spare room), not the whole file again.
   */
  private segmentBuffer(index: number): Buffer {
    const seg = this.segments[index];
    let c = this.readCache;
    if (c === null || c.seg !== index) {
      const buf = readFileSync(seg.file);
      c = { seg: index, bytes: buf.length, buf: Buffer.allocUnsafe(Math.max(buf.length, this.segmentBytes) + MAX_RECORD) };
      buf.copy(c.buf);
      this.readCache = c;
    }
    if (c.bytes < seg.bytes) {
      if (c.buf.length < seg.bytes) {
        const grown = Buffer.allocUnsafe(seg.bytes * 2);
        c.buf.copy(grown, 0, 0, c.bytes);
        c.buf = grown;
      }
      const fd = openSync(seg.file, "r");
      try {
        while (c.bytes < seg.bytes) {
          const n = readSync(fd, c.buf, c.bytes, seg.bytes - c.bytes, c.bytes);
          if (n === 0) break;
          c.bytes += n;
        }
      } finally {
        closeSync(fd);
      }
    }
    return c.buf.subarray(0, c.bytes);
  }

  /** The broker acknowledged a record. */
  ack(id: number): void {
    if (!this.inflight.delete(id) || id <= this.ackedId) return;
    this.ackedAhead.add(id);
    while (this.ackedAhead.delete(this.ackedId + 1)) this.ackedId++;
    this.releaseAcked();
  }

  /** The connection dropped: whatever is in flight will be sent again. */
  rewind(): void {
    this.inflight.clear();
    this.ackedAhead.clear();
    this.rewindToAcked();
  }

  private rewindToAcked(): void {
    this.read = { seg: 0, off: 0 }; // peek() skips what is acknowledged
    this.readCache = null;
  }

  /** Deletes segments whose every record is acknowledged (never the newest one). */
  private releaseAcked(): void {
    while (this.segments.length > 1) {
      const s = this.segments[0];
      const lastId = s.firstId + s.count - 1;
      if (lastId > this.ackedId) break;
      this.dropSegment0();
    }
  }

  private dropSegment0(): void {
    const s = this.segments.shift() as Segment;
    // No directory sync of its own: a segment goes only once the acknowledged mark has moved past
    // it (released or dropped), and saving that mark at the next flush syncs this same directory,
    // which puts the deletion on disk with it (test/spool-durability.test.ts).
    unlinkSync(s.file);
    this.readCache = null;
    this.appended = null; // its segment index has shifted
    this.read = this.read.seg === 0 ? { seg: 0, off: 0 } : { seg: this.read.seg - 1, off: this.read.off };
  }

  /**
   * Overflow: drops the oldest segment, acknowledged or not. Returns how many unacknowledged
   * records went with it.
   */
  dropOldest(): number {
    if (this.segments.length === 0) return 0;
    const s = this.segments[0];
    const lastId = s.firstId + s.count - 1;
    const lost = Math.max(0, lastId - Math.max(this.ackedId, s.firstId - 1));
    if (this.segments.length === 1) this.startSegment();
    this.dropSegment0();
    for (const id of [...this.inflight]) if (id <= lastId) this.inflight.delete(id);
    for (const id of [...this.ackedAhead]) if (id <= lastId) this.ackedAhead.delete(id);
    // the dropped records count as gone: nothing waits for them
    this.ackedId = Math.max(this.ackedId, lastId);
    this.dropped += lost;
    return lost;
  }

  /** The descriptor takes no more writes: it is closed now, or once its records are synced. */
  private retire(fd: number): void {
    this.retired.add(fd);
    this.closeIfDone(fd);
  }

  private closeIfDone(fd: number): void {
    if (this.retired.has(fd) && !this.unsynced.has(fd) && !this.syncing.has(fd)) {
      this.retired.delete(fd);
      closeSync(fd);
    }
  }

  /**
   * flush() without blocking the event loop: the fsyncs and the acknowledged mark's write run
   * on libuv's thread pool, so a slow disk (an eMMC fsync can take tens of ms) never holds up
   * the Modbus polls and the leak path on the main thread. Records written meanwhile are covered
   * by the next flush. Await it before close(): a background save of the acknowledged mark that
   * landed after the close's own could put an older mark back.
   */
  async flushInBackground(): Promise<void> {
    const fds = [...this.unsynced];
    const dir = this.dirUnsynced;
    this.unsynced.clear();
    this.dirUnsynced = false;
    for (const fd of fds) this.syncing.add(fd);
    try {
      await Promise.all(fds.map((fd) => new Promise<void>((resolve, reject) => fsync(fd, (err) => (err === null ? resolve() : reject(err))))));
      if (dir) await syncDirectoryInBackground(this.dir);
    } catch (err) {
      // not known to be on disk: the next flush syncs them again
      for (const fd of fds) this.unsynced.add(fd);
      if (dir) this.dirUnsynced = true;
      throw err;
    } finally {
      for (const fd of fds) {
        this.syncing.delete(fd);
        this.closeIfDone(fd);
      }
    }
    const acked = this.ackedId;
    if (acked !== this.ackedSaved) {
      this.ackedSaved = acked; // asked for: a later flush need not ask again
      try {
        await this.ackedStore.saveInBackground({ ackedId: acked });
      } catch (err) {
        this.ackedSaved = -1; // unknown on disk: the next flush writes it again
        throw err;
      }
    }
  }

  /** Puts written records, new segments' names and the acknowledged mark on disk (fsync). */
  flush(): void {
    for (const fd of [...this.unsynced]) {
      fsyncSync(fd);
      this.unsynced.delete(fd);
      this.closeIfDone(fd);
    }
    if (this.dirUnsynced) {
      syncDirectory(this.dir);
      this.dirUnsynced = false;
    }
    if (this.ackedId !== this.ackedSaved) {
      this.ackedStore.save({ ackedId: this.ackedId });
      this.ackedSaved = this.ackedId;
    }
  }

  close(): void {
    this.flush();
    if (this.fd !== null) this.retire(this.fd);
    this.fd = null;
  }
}
