// One on-disk queue of the store-and-forward spool: an append-only log in segment files.
//
//   <dir>/<firstId, 16 digits>.seg   records: [u32 length][u32 CRC-32 of the payload][payload]
//   <dir>/acked                      {"ackedId": n}: every id <= n reached the broker (PUBACK)
//
// Ids are this queue's sequence numbers: consecutive, and never reused across restarts (the
// newest segment is never deleted, and its name carries the next id when it is empty).
// Damage found at start (a flipped bit, a cut-short or overwritten stretch) loses only the
// records it hit: the reader resynchronises on the next record whose CRC holds, the segment is
// rewritten from its intact records (the original copied to quarantine), and the ids of what was
// lost are counted and never given out again; where the damage reaches the end of the newest
// file, as many ids as that stretch could have held are skipped.
// A record is forgotten only once it, and every record before it, has been acknowledged; until
// `acked` is written again after a crash, some acknowledged records are sent a second time
// (at least once; consumers de-duplicate by sequence number).
//
// Reading follows the log from the oldest unacknowledged record to the tail, through the page
// cache, so the same path serves live sending and replay after an outage.
import { chmodSync, closeSync, fsync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { JsonStateFile } from "../../lib/json-state-file.js";
import { syncDirectory, syncDirectoryInBackground } from "../../lib/sync-directory.js";
import { decodeAt, encodeRecord, HEADER, MAX_RECORD, type SpoolRecord } from "./spool-record.js";
import { countIn, salvageSegments, type Range, type Segment } from "./spool-salvage.js";

export type { SpoolRecord } from "./spool-record.js";

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
  /**
   * records lost to damage: ids never to be given out again. Exact where intact records follow
   * the damage; where it reaches the end of the newest file, the most that stretch could hold
   */
  lost: number;
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
  /** records lost to damage found at start (QueueOpenReport.lost) */
  lost = 0;
  /** ids lost to damage and not yet behind the acknowledged mark, in order: the mark moves over them */
  private readonly missing: Range[] = [];

  private readonly maxSegmentFileBytes: number; // segmentBytes, and its last record past it

  constructor(
    readonly dir: string,
    private readonly segmentBytes: number,
  ) {
    this.maxSegmentFileBytes = segmentBytes + HEADER + MAX_RECORD;
    // what the pod sends is its own user's alone (issue #54: segments were world-readable)
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    this.ackedStore = new JsonStateFile(join(dir, "acked"), (d) => {
      const n = (d as { ackedId?: unknown } | null)?.ackedId;
      if (!Number.isSafeInteger(n) || (n as number) < 0) throw new Error("no ackedId");
      return { ackedId: n as number };
    });
  }

  /** Reads the queue back from disk, salvaging what is damaged (spool-salvage.ts). */
  open(quarantineDir: string): QueueOpenReport {
    const acked = this.ackedStore.load();
    this.ackedId = acked.value?.ackedId ?? 0;
    this.ackedSaved = this.ackedId;
    const found = salvageSegments(this.dir, quarantineDir, this.ackedId, this.maxSegmentFileBytes);
    this.segments = found.segments;
    this.missing.push(...found.missing);
    this.nextId = found.maxId + 1;
    if (this.segments.length === 0) this.startSegment();
    else this.fd = openSync(this.segments[this.segments.length - 1].file, "a", 0o600);
    this.lost += found.lost;
    this.advanceAcked();
    this.releaseAcked();
    this.rewindToAcked();
    return { pending: this.pendingCount(), quarantined: [...(acked.problem === undefined ? [] : [acked.problem]), ...found.quarantined], tornTail: found.tornTail, lost: found.lost };
  }

  /** Starts a new newest segment whose first record will be firstId. */
  private startSegment(firstId = this.nextId): void {
    const file = join(this.dir, `${String(firstId).padStart(16, "0")}.seg`);
    // open the new file before letting go of the old one: if the disk refuses, writing goes on
    // (or fails) on the old segment, never on a closed descriptor
    const fd = openSync(file, "a", 0o600);
    if (this.fd !== null) this.retire(this.fd);
    this.fd = fd;
    this.dirUnsynced = true;
    this.segments.push({ firstId, file, bytes: statSync(file).size, count: 0, lastId: firstId - 1, holes: [] });
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
    last.lastId = r.id;
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
    return this.ackedIn(first);
  }

  /** How many of a segment's records are acknowledged (its ids are consecutive but for its holes). */
  private ackedIn(s: Segment): number {
    const upTo = Math.min(this.ackedId, s.lastId);
    if (upTo < s.firstId) return 0;
    return Math.max(0, Math.min(s.count, upTo - s.firstId + 1 - countIn(s.holes, s.firstId, upTo)));
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
    this.advanceAcked();
    this.releaseAcked();
  }

  /**
   * The broker took a record that waits for mission control's own acknowledgement (the uplink's
   * consumerAck): no longer in flight on this connection, and kept until ackThrough() covers it.
   */
  delivered(id: number): void {
    this.inflight.delete(id);
  }

  /**
   * Mission control's consumer has every record up to `n` (consumerAck): each is forgotten, sent
   * or not, whatever the broker said of it. An `n` past the last id given out is refused (false):
   * no consumer can have what the pod never made. An `n` at or below the mark changes nothing.
   */
  ackThrough(n: number): boolean {
    if (n >= this.nextId) return false;
    if (n <= this.ackedId) return true;
    for (const id of this.inflight) if (id <= n) this.inflight.delete(id);
    for (const id of this.ackedAhead) if (id <= n) this.ackedAhead.delete(id);
    this.ackedId = n;
    this.advanceAcked();
    this.releaseAcked();
    return true;
  }

  /** The acknowledged mark: every id at or below it is forgotten. */
  get acked(): number {
    return this.ackedId;
  }

  /** The oldest record not acknowledged has been sent and answered by the broker (false with none held). */
  oldestDelivered(): boolean {
    const oldest = this.ackedId + 1;
    if (oldest >= this.nextId || this.inflight.has(oldest)) return false;
    return (this.peek()?.id ?? this.nextId) > oldest;
  }

  /** Moves the acknowledged mark over every id acknowledged or lost right after it. */
  private advanceAcked(): void {
    for (;;) {
      if (this.ackedAhead.delete(this.ackedId + 1)) {
        this.ackedId++;
        continue;
      }
      const m = this.missing[0];
      if (m !== undefined && m[0] <= this.ackedId + 1) {
        this.ackedId = Math.max(this.ackedId, m[1]);
        this.missing.shift();
        continue;
      }
      return;
    }
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
      if (this.segments[0].lastId > this.ackedId) break;
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
    const lastId = s.lastId;
    const lost = s.count - this.ackedIn(s);
    if (this.segments.length === 1) this.startSegment();
    this.dropSegment0();
    for (const id of [...this.inflight]) if (id <= lastId) this.inflight.delete(id);
    for (const id of [...this.ackedAhead]) if (id <= lastId) this.ackedAhead.delete(id);
    // the dropped records count as gone: nothing waits for them
    this.ackedId = Math.max(this.ackedId, lastId);
    this.advanceAcked();
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
