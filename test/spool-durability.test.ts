// What the spool promises across a power cut, checked at the system-call level: the spool runs
// in a child process under strace, and the trace must show every record's bytes fsynced after
// they were written (including the last records of a segment that rolled over), and the spool
// directory fsynced after each new segment file was created (or its name may not survive) and
// after each acknowledged one was deleted (or it may come back).
// Nothing is mocked: these are the calls the kernel saw.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "./helpers/temp-dirs.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Appends records (256-byte segments: many rollovers), flushing as the uplink does: in the background, then on close. */
const SCRIPT = `
import { Spool } from "./dist/agent/uplink/spool.js";
const s = new Spool({ dir: process.argv[1], maxBytes: 1 << 20, segmentBytes: 256 });
s.open();
const append = (k) => s.append("critical", "e", (n) => JSON.stringify({ n, pad: "x".repeat(40) }));
for (let i = 0; i < 12; i++) append();
await s.flushInBackground();
for (let i = 0; i < 12; i++) append();
const flushing = s.flushInBackground();
for (let i = 0; i < 12; i++) append(); // rollovers while that flush runs
await flushing;
for (let i = 0; i < 5; i++) append();
s.flush();
for (let i = 0; i < 5; i++) append();
s.flush(); // every new segment's name on disk: the deletions below are all the next flush covers
// everything acknowledged: the acknowledged segments are deleted, and a flush follows
for (let t = s.take(); t !== undefined; t = s.take()) s.ack(t.cls, t.record.id);
await s.flushInBackground();
s.close();
`;

interface Call {
  name: string;
  args: string;
  result: number;
}

/** The trace's calls in order, with calls interrupted by another thread's joined back together. */
function parseTrace(text: string): Call[] {
  const pending = new Map<string, string>();
  const calls: Call[] = [];
  for (const line of text.split("\n")) {
    const m = /^(\d+)\s+(.*)$/.exec(line);
    if (m === null) continue;
    const [, pid, rest] = m;
    if (rest.endsWith("<unfinished ...>")) {
      pending.set(pid, rest.slice(0, -"<unfinished ...>".length));
      continue;
    }
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(rest);
    const full = resumed !== null ? (pending.get(pid) ?? "") + resumed[1] : rest;
    pending.delete(pid);
    const c = /^(\w+)\((.*)\)\s+=\s+(-?\d+)/.exec(full);
    if (c !== null) calls.push({ name: c[1], args: c[2], result: Number(c[3]) });
  }
  return calls;
}

describe("spool durability", () => {
  it("fsyncs every segment's records after their last write, even across a rollover, and the directory after each new or deleted segment", () => {
    const dir = tempDir("pw-spool-sync-");
    dirs.push(dir);
    const spoolDir = join(dir, "spool");
    const traceFile = join(dir, "trace");
    const r = spawnSync(
      "strace",
      ["-f", "-qq", "-o", traceFile, "-e", "trace=openat,write,pwrite64,fsync,fdatasync,close,unlink,unlinkat", "node", "--input-type=module", "-e", SCRIPT, spoolDir],
      { encoding: "utf8", timeout: 60_000 },
    );
    expect(r.error, "strace must be installed (Debian strace; npm test installs it: scripts/test-peers.sh)").toBeUndefined();
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);

    const queueDir = join(spoolDir, "critical");
    const fdPath = new Map<number, string>();
    /** descriptors opened for writing (the spool also opens segments read-only to replay them) */
    const writers = new Set<number>();
    /** per segment file: whether bytes were written since its last fsync */
    const unsynced = new Map<string, boolean>();
    const created: string[] = [];
    let segmentsCreatedSinceDirSync = 0;
    let segmentsDeletedSinceDirSync = 0;
    let deleted = 0;
    let dirSyncs = 0;
    for (const c of parseTrace(readFileSync(traceFile, "utf8"))) {
      const path = /"([^"]*)"/.exec(c.args)?.[1];
      const fd = Number(c.args.split(",")[0]);
      if (c.name === "openat" && path !== undefined && c.result >= 0) {
        fdPath.set(c.result, path);
        if (c.args.includes("O_WRONLY")) writers.add(c.result);
        else writers.delete(c.result);
        if (path.startsWith(queueDir) && path.endsWith(".seg") && c.args.includes("O_CREAT")) {
          created.push(path);
          segmentsCreatedSinceDirSync++;
        }
      } else if ((c.name === "write" || c.name === "pwrite64") && fdPath.get(fd)?.endsWith(".seg") === true && c.result > 0) {
        unsynced.set(fdPath.get(fd) as string, true);
      } else if ((c.name === "fsync" || c.name === "fdatasync") && c.result === 0) {
        const p = fdPath.get(fd);
        if (p === queueDir) {
          segmentsCreatedSinceDirSync = 0;
          segmentsDeletedSinceDirSync = 0;
          dirSyncs++;
        }
        else if (p !== undefined) unsynced.set(p, false);
      } else if ((c.name === "unlink" || c.name === "unlinkat") && path?.startsWith(queueDir) === true && path.endsWith(".seg") && c.result === 0) {
        deleted++;
        segmentsDeletedSinceDirSync++;
      } else if (c.name === "close" && fdPath.has(fd)) {
        const p = fdPath.get(fd) as string;
        // a segment's writer closed with records not yet fsynced: nothing will sync them now
        if (writers.has(fd)) expect(unsynced.get(p) ?? false, `${p} closed with unsynced records`).toBe(false);
        fdPath.delete(fd);
      }
    }
    expect(created.length).toBeGreaterThan(5); // the scenario rolled over many times
    for (const [p, dirty] of unsynced) expect(dirty, `${p} left with unsynced records`).toBe(false);
    // one directory sync per flush that followed a rollover (no acknowledged mark was saved,
    // which syncs the same directory), and none of the created names left unsynced at the end
    expect(dirSyncs).toBeGreaterThanOrEqual(3);
    expect(segmentsCreatedSinceDirSync).toBe(0);
    // acknowledged segments were deleted, and no deletion was left out of a directory sync: a
    // deletion lost to a power cut would bring acknowledged records back to be sent again
    expect(deleted).toBeGreaterThan(5);
    expect(segmentsDeletedSinceDirSync).toBe(0);
  });
});
