// The store-and-forward spool on a real filesystem: order, PUBACK-based removal, restart,
// overflow policy, torn writes and corrupt files.
import { chmodSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync, appendFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Spool, type Taken } from "../agent/uplink/spool.js";
import { Prng } from "../sim/prng.js";
import { tempDir } from "./helpers/temp-dirs.js";

const dirs: string[] = [];
function spoolDir(): string {
  const d = tempDir("pw-spool-");
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const body = (seq: number, extra = ""): string => JSON.stringify({ seq, extra });
function drain(s: Spool, ack = true): Taken[] {
  const out: Taken[] = [];
  for (let t = s.take(); t !== undefined; t = s.take()) {
    out.push(t);
    if (ack) s.ack(t.cls, t.record.id);
  }
  return out;
}

describe("spool", () => {
  it("hands out exactly what was written, in order, under random appends, takes, acks, rewinds and restarts", () => {
    // A record just appended is handed out from memory, not read back from its segment file;
    // this holds that shortcut to the files and to a model, across segment rotations (1 KB
    // segments), releases of acknowledged segments and restarts (which read the files afresh).
    const dir = spoolDir();
    const rng = new Prng(0x5b001);
    const opts = { dir, maxBytes: 1 << 22, segmentBytes: 1024 };
    let s = new Spool(opts);
    s.open();
    const bodies = new Map<number, string>();
    let ackedPrefix = 0; // every id up to here is acknowledged
    const ackedAhead = new Set<number>(); // acknowledged out of order since the last rewind
    const inflight = new Set<number>();
    let lastTaken = 0;
    const expectedNext = (): number | undefined => {
      for (let id = Math.max(lastTaken, ackedPrefix) + 1; id <= bodies.size; id++) if (!ackedAhead.has(id)) return id;
      return undefined;
    };
    const resend = (): void => {
      // a rewind or restart forgets out-of-order acknowledgements: those records go again
      ackedAhead.clear();
      inflight.clear();
      lastTaken = ackedPrefix;
    };
    for (let step = 0; step < 4000; step++) {
      const op = rng.next();
      // more takes than appends: the reader mostly keeps up, as a connected uplink does
      if (op < 0.3) {
        const extra = "x".repeat(rng.int(0, 60));
        const { seq } = s.append("critical", "events", (n) => body(n, extra), step);
        bodies.set(seq, body(seq, extra));
      } else if (op < 0.75) {
        const t = s.take();
        const want = expectedNext();
        expect(t?.record.id, `step ${step}`).toBe(want);
        if (t === undefined) continue;
        expect(t.record.body).toBe(bodies.get(t.record.id));
        lastTaken = t.record.id;
        inflight.add(t.record.id);
      } else if (op < 0.99) {
        if (inflight.size === 0) continue;
        // brokers mostly acknowledge in order; now and then one comes back ahead of the others
        const id = rng.chance(0.8) ? Math.min(...inflight) : rng.pick([...inflight]);
        inflight.delete(id);
        s.ack("critical", id);
        if (id === ackedPrefix + 1) {
          ackedPrefix = id;
          while (ackedAhead.delete(ackedPrefix + 1)) ackedPrefix++;
        } else {
          ackedAhead.add(id);
        }
      } else if (op < 0.995) {
        s.rewind();
        resend();
      } else {
        s.close();
        s = new Spool(opts);
        expect(s.open().quarantined).toEqual([]);
        resend();
      }
    }
    s.close();
  });

  it("numbers each class consecutively and hands out every critical record before any telemetry, each class in order", () => {
    const s = new Spool({ dir: spoolDir(), maxBytes: 1 << 20, segmentBytes: 4096 });
    s.open();
    expect(s.append("critical", "events", body, 10).seq).toBe(1);
    expect(s.append("telemetry", "telemetry", body, 5).seq).toBe(1);
    expect(s.append("critical", "events", body, 20).seq).toBe(2);
    expect(s.append("telemetry", "telemetry", body, 20).seq).toBe(2);
    const got = drain(s).map((t) => `${t.cls}:${t.record.id}`);
    // the telemetry from t=5 waits behind the events from t=10 and t=20: alarms first
    expect(got).toEqual(["critical:1", "critical:2", "telemetry:1", "telemetry:2"]);
    expect(s.depth()).toEqual({ critical: 0, telemetry: 0 });
    s.close();
  });

  it("removes a record only after its ack: unacknowledged ones come back after a rewind and after a restart", () => {
    const dir = spoolDir();
    const s = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 256 });
    s.open();
    for (let i = 0; i < 50; i++) s.append("critical", "events", (n) => body(n, "x".repeat(20)), i);
    const first = drain(s, false);
    expect(first).toHaveLength(50);
    first.slice(0, 20).forEach((t) => s.ack(t.cls, t.record.id));
    s.rewind();
    const again = drain(s, false);
    expect(again.map((t) => t.record.id)).toEqual(Array.from({ length: 30 }, (_, i) => i + 21));
    again.slice(0, 10).forEach((t) => s.ack(t.cls, t.record.id));
    s.close();

    const s2 = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 256 });
    const rep = s2.open();
    expect(rep.pending.critical).toBe(20);
    expect(rep.quarantined).toEqual([]);
    const after = drain(s2);
    expect(after.map((t) => t.record.id)).toEqual(Array.from({ length: 20 }, (_, i) => i + 31));
    // numbering carries on across the restart, even with every record acknowledged
    expect(s2.append("critical", "events", body).seq).toBe(51);
    s2.close();
    // acknowledged segments are deleted; the newest is kept
    expect(readdirSync(join(dir, "critical")).filter((f) => f.endsWith(".seg")).length).toBe(1);
  });

  it("keeps numbering after everything was acknowledged and the daemon restarted twice", () => {
    const dir = spoolDir();
    for (let round = 0; round < 3; round++) {
      const s = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 128 });
      s.open();
      for (let i = 0; i < 10; i++) expect(s.append("critical", "events", body).seq).toBe(round * 10 + i + 1);
      drain(s);
      s.close();
    }
  });

  it("on overflow drops telemetry before any critical record, and counts every drop", () => {
    const s = new Spool({ dir: spoolDir(), maxBytes: 8192, segmentBytes: 1024 });
    s.open();
    let droppedT = 0;
    let droppedC = 0;
    for (let i = 0; i < 200; i++) {
      const d = s.append(i % 4 === 0 ? "critical" : "telemetry", "t", (n) => body(n, "y".repeat(40))).dropped;
      droppedT += d.telemetry;
      droppedC += d.critical;
    }
    expect(droppedT).toBeGreaterThan(0);
    expect(droppedC).toBe(0);
    expect(s.bytes).toBeLessThanOrEqual(8192);
    const out = drain(s);
    // every critical record survived, in order
    expect(out.filter((t) => t.cls === "critical").map((t) => t.record.id)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(out.filter((t) => t.cls === "telemetry").length + droppedT).toBe(150);
    expect(s.dropped()).toEqual({ critical: 0, telemetry: droppedT });
    // with no telemetry left to drop, critical records go, oldest first, and are counted
    for (let i = 0; i < 200; i++) droppedC += s.append("critical", "e", (n) => body(n, "z".repeat(40))).dropped.critical;
    expect(droppedC).toBeGreaterThan(0);
    const rest = drain(s).map((t) => t.record.id);
    expect(rest[rest.length - 1]).toBe(250);
    expect(rest.length + droppedC).toBe(200);
    s.close();
  });

  it("cuts off a torn last record (a crash mid-write) and keeps the rest", () => {
    const dir = spoolDir();
    const s = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    s.open();
    for (let i = 0; i < 5; i++) s.append("critical", "e", body);
    s.close();
    const seg = join(dir, "critical", readdirSync(join(dir, "critical")).find((f) => f.endsWith(".seg")) ?? "");
    appendFileSync(seg, Buffer.from([50, 0, 0, 0, 1, 2, 3]));
    const s2 = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    const rep = s2.open();
    expect(rep.tornTail).toBe(true);
    expect(rep.quarantined).toEqual([]);
    expect(drain(s2).map((t) => t.record.id)).toEqual([1, 2, 3, 4, 5]);
    expect(s2.append("critical", "e", body).seq).toBe(6);
    s2.close();
  });

  /** A critical queue of n records in small segments, closed; returns its segment files in order. */
  const written = (dir: string, n: number, segmentBytes = 250): string[] => {
    const s = new Spool({ dir, maxBytes: 1 << 20, segmentBytes });
    s.open();
    for (let i = 0; i < n; i++) s.append("critical", "e", (q) => body(q, "q".repeat(30)));
    s.close();
    return readdirSync(join(dir, "critical"))
      .filter((f) => f.endsWith(".seg"))
      .sort()
      .map((f) => join(dir, "critical", f));
  };
  /** Opens the spool again, drains it, restarts it, and checks that nothing is left to send. */
  const reopenAndDrain = (dir: string, segmentBytes = 250): { rep: ReturnType<Spool["open"]>; ids: number[]; next: number } => {
    const s2 = new Spool({ dir, maxBytes: 1 << 20, segmentBytes });
    const rep = s2.open();
    const ids = drain(s2).map((t) => t.record.id);
    const next = s2.append("critical", "e", body).seq;
    drain(s2);
    s2.close();
    // the acknowledged mark moved over the lost ids: a restart has nothing left to resend
    const s3 = new Spool({ dir, maxBytes: 1 << 20, segmentBytes });
    expect(s3.open().pending.critical).toBe(0);
    expect(drain(s3)).toEqual([]);
    s3.close();
    return { rep, ids, next };
  };

  it("salvages past a damaged record: only the record hit is lost, counted, and its id is never reused", () => {
    const dir = spoolDir();
    const segs = written(dir, 12, 600);
    expect(segs.length).toBeGreaterThan(1);
    const bytes = readFileSync(segs[0]);
    const recLen = bytes.readUInt32LE(0) + 8;
    bytes[recLen + 12] ^= 0xff; // flip a byte inside the second record
    writeFileSync(segs[0], bytes);
    const { rep, ids, next } = reopenAndDrain(dir, 600);
    expect(rep.quarantined).toHaveLength(1);
    expect(rep.quarantined[0]).toMatch(/CRC mismatch at offset \d+ \(\d+ bytes skipped\); \d+ intact records kept; the original copied to/);
    expect(readdirSync(join(dir, "quarantine"))).toHaveLength(1);
    expect(rep.lost).toEqual({ critical: 1, telemetry: 0 });
    expect(ids).toEqual([1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]); // everything after the damage too
    expect(next).toBe(13);
  });

  it("tells damage in the newest file from a torn last write: records after a bad length are kept", () => {
    const dir = spoolDir();
    const [seg] = written(dir, 6, 1 << 16);
    const bytes = readFileSync(seg);
    const recLen = bytes.readUInt32LE(0) + 8;
    bytes.writeUInt32LE(50_000, recLen); // record 2's length now runs past the end of the file
    writeFileSync(seg, bytes);
    const { rep, ids, next } = reopenAndDrain(dir, 1 << 16);
    expect(rep.tornTail).toBe(false);
    expect(rep.quarantined[0]).toMatch(/bad record length at offset/);
    expect(ids).toEqual([1, 3, 4, 5, 6]);
    expect(rep.lost.critical).toBe(1);
    expect(next).toBe(7);
  });

  it("keeps its files to its own user: directories 0700 and segments 0600, and makes them so on a spool from before", () => {
    const dir = spoolDir();
    const segs = written(dir, 12, 600);
    const mode = (f: string): number => statSync(f).mode & 0o777;
    expect(mode(join(dir, "critical"))).toBe(0o700);
    for (const f of segs) expect(mode(f), f).toBe(0o600);
    // a spool written before its modes were set: opened, it is put right
    for (const f of segs) chmodSync(f, 0o644);
    chmodSync(join(dir, "critical"), 0o755);
    const s = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 600 });
    s.open();
    s.close();
    expect(mode(join(dir, "critical"))).toBe(0o700);
    for (const f of segs) expect(mode(f), f).toBe(0o600);
  });

  it("reads a segment file grown past 2 GiB only as far as a segment can hold: its records kept, the file moved aside, the spool opened", () => {
    // issue #54: readFileSync threw ERR_FS_FILE_TOO_LARGE on it, and the daemon ran on half-started
    const dir = spoolDir();
    const segs = written(dir, 12, 600);
    const newest = segs[segs.length - 1];
    const intact = readFileSync(newest).length;
    truncateSync(newest, 2_362_232_013); // 2.2 GiB, sparse: zeroes past the records, no disk used
    const { rep, ids, next } = reopenAndDrain(dir, 600);
    expect(rep.quarantined).toHaveLength(1);
    expect(rep.quarantined[0]).toMatch(/past the \d+ a segment can hold: read to there only/);
    expect(rep.quarantined[0]).toMatch(/the original moved to/);
    expect(ids).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]); // every record before the growth kept
    expect(next).toBeGreaterThan(12);
    // rewritten from its intact records (and the one appended since): a segment's size again
    expect(readFileSync(newest).length).toBeGreaterThanOrEqual(intact);
    expect(readFileSync(newest).length).toBeLessThan(4096);
    const aside = readdirSync(join(dir, "quarantine"));
    expect(aside).toHaveLength(1);
    expect(statSync(join(dir, "quarantine", aside[0])).size).toBe(2_362_232_013);
  });

  it("skips, and counts, as many ids as damage reaching the end of the newest file could have held", () => {
    const dir = spoolDir();
    const [seg] = written(dir, 10, 1 << 16);
    const bytes = readFileSync(seg);
    // the last three records overwritten by garbage
    let off = 0;
    for (let i = 0; i < 7; i++) off += bytes.readUInt32LE(off) + 8;
    bytes.fill(0x5a, off);
    writeFileSync(seg, bytes);
    const { rep, ids, next } = reopenAndDrain(dir, 1 << 16);
    expect(ids).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(next).toBeGreaterThan(10); // 8, 9 and 10 may have been sent before: never given out again
    expect(rep.lost.critical).toBe(next - 8); // every skipped id counted lost, an upper bound
    expect(rep.quarantined[0]).toMatch(/to the end of the file/);
  });

  it("counts a whole segment file gone missing as lost, and still moves the acknowledged mark past it", () => {
    const dir = spoolDir();
    const segs = written(dir, 12);
    const gone = segs[1];
    const firstGone = Number(gone.split("/").pop()?.slice(0, 16));
    const firstAfter = Number((segs[2]).split("/").pop()?.slice(0, 16));
    rmSync(gone);
    const { rep, ids, next } = reopenAndDrain(dir);
    expect(rep.lost.critical).toBe(firstAfter - firstGone);
    expect(ids).not.toContain(firstGone);
    expect(ids).toContain(12);
    expect(next).toBe(13);
  });

  it("finds every intact record after damage of random size at random places (seeded)", () => {
    const rng = new Prng(7);
    for (let round = 0; round < 40; round++) {
      const dir = spoolDir();
      const segs = written(dir, 30, 600);
      const victim = segs[Math.floor(rng.next() * segs.length)];
      const bytes = readFileSync(victim);
      const at = Math.floor(rng.next() * bytes.length);
      const len = 1 + Math.floor(rng.next() * 120);
      for (let i = at; i < Math.min(bytes.length, at + len); i++) bytes[i] = Math.floor(rng.next() * 256);
      writeFileSync(victim, bytes);
      // which records the damage touched, from the original layout
      const s2 = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 600 });
      const rep = s2.open();
      const ids = drain(s2).map((t) => t.record.id);
      const next = s2.append("critical", "e", body).seq;
      s2.close();
      const lostIds = Array.from({ length: 30 }, (_, i) => i + 1).filter((id) => !ids.includes(id));
      // nothing intact is lost: at most the records the damaged bytes overlap (a record is ~70 bytes)
      expect(lostIds.length, `round ${round}`).toBeLessThanOrEqual(Math.ceil(len / 60) + 1);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toEqual([...ids].sort((x, y) => x - y));
      expect(next, `round ${round}`).toBeGreaterThan(30);
      if (lostIds.length > 0) expect(rep.lost.critical, `round ${round}`).toBeGreaterThanOrEqual(lostIds.length);
    }
  });

  it("treats garbage in place of the acknowledged mark as unknown: resends rather than loses", () => {
    const dir = spoolDir();
    const s = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    s.open();
    for (let i = 0; i < 3; i++) s.append("critical", "e", body);
    drain(s);
    s.close();
    writeFileSync(join(dir, "critical", "acked"), "{not json");
    const s2 = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 1 << 16 });
    const rep = s2.open();
    expect(rep.quarantined[0]).toMatch(/acked unreadable/);
    expect(drain(s2).map((t) => t.record.id)).toEqual([1, 2, 3]);
    s2.close();
  });

  it("flushes in the background: the acknowledged mark reaches the file, and a segment rotated during the fsync stays usable", async () => {
    const dir = spoolDir();
    const s = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 256 });
    s.open();
    for (let i = 0; i < 10; i++) s.append("critical", "e", (n) => body(n, "x".repeat(20)));
    drain(s, false)
      .slice(0, 4)
      .forEach((t) => s.ack(t.cls, t.record.id));
    const flushing = s.flushInBackground();
    // the event loop is free while the fsync runs: appends go on, and rotate the segment the
    // fsync is working on (its descriptor is closed only once the fsync is done)
    for (let i = 0; i < 10; i++) s.append("critical", "e", (n) => body(n, "y".repeat(20)));
    await flushing;
    await s.flushInBackground();
    // read back by a second spool without closing the first (as after a crash): the mark the
    // background flush wrote holds, nothing is lost, nothing acknowledged comes back
    const s2 = new Spool({ dir, maxBytes: 1 << 20, segmentBytes: 256 });
    const rep = s2.open();
    expect(rep.quarantined).toEqual([]);
    expect(drain(s2).map((t) => t.record.id)).toEqual(Array.from({ length: 16 }, (_, i) => i + 5));
    s2.close();
    s.close();
  });
});
