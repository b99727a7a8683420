// A flight recording on disk: one JSON header line, then the ring window's rows as they were in
// memory (little-endian f64 and i32), then its checkpoints. Written to a temporary file, synced
// and renamed, so a crash (SIGKILL included) leaves the previous version or this one, never part
// of one; read back bounded, and refused when its sizes do not add up.
import { closeSync, openSync, readdirSync, readSync, statSync, unlinkSync } from "node:fs";
import { open, readFile, rename, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { BankSpec } from "../../hotpath-as/bank-config.js";
import { syncDirectoryInBackground } from "../../lib/sync-directory.js";
import { recordLayout, type FlightRingReader, type RingWindow } from "../control/flight-ring.js";

export const RECORDING_FORMAT = "podwarden-flight-recording";
// 2: a loop's checkpoint and record carry its relay autotune (fields and start/stop edges)
export const RECORDING_VERSION = 2;
export const RECORDING_SUFFIX = ".pwrec";
/** a header is a few hundred KB at most (names and the bank spec); a longer first line is not ours */
const MAX_HEADER_BYTES = 4 * 1024 * 1024;
/** no configuration records more than this (the recorder's schema bounds the window) */
export const MAX_RECORDING_BYTES = 1024 * 1024 * 1024;

export interface RecordingTrigger {
  /** what fired: `alarm:leak:rack-3`, `mode:Failsafe`, `escalation:rack-2`, `operator:<who>` */
  reason: string;
  /** the ring seq current when it fired */
  seq: number;
  /** wall time, ISO 8601 */
  at: string;
}

export interface RecordingHeader {
  format: typeof RECORDING_FORMAT;
  version: number;
  id: string;
  site: string;
  pod: string;
  /** sha256 of the config file the daemon ran */
  configHash: string;
  /** the package version, and which hot-path build the CPU ran */
  build: { version: string; hotPath: string };
  createdAt: string;
  periodMs: number;
  decimation: number;
  checkpointEvery: number;
  sizes: { points: number; loops: number; racks: number };
  /** what each bank slot is: the configured point ids, the loops' and racks' names */
  names: { points: string[]; loops: string[]; racks: string[] };
  /** the bank's config when the recording was written */
  spec: BankSpec;
  triggers: RecordingTrigger[];
  firstSeq: number;
  count: number;
  checkpoints: number;
  /** the trigger's place in the window: records before it are the pre-trigger window */
  triggerSeq: number;
  /** false: written before the post-trigger window was complete (it is rewritten when it is) */
  complete: boolean;
}

export interface Recording {
  header: RecordingHeader;
  window: RingWindow;
}

function bytesOf(a: Float64Array | Int32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function isHeader(x: unknown): x is RecordingHeader {
  if (typeof x !== "object" || x === null) return false;
  const h = x as Record<string, unknown>;
  const sizes = h.sizes as Record<string, unknown> | undefined;
  const ints = (o: Record<string, unknown> | undefined, keys: string[]): boolean => o !== undefined && keys.every((k) => Number.isInteger(o[k]) && (o[k] as number) >= 0);
  return (
    h.format === RECORDING_FORMAT &&
    typeof h.id === "string" &&
    ints(h, ["version", "decimation", "checkpointEvery", "firstSeq", "count", "checkpoints", "triggerSeq"]) &&
    typeof sizes === "object" &&
    ints(sizes, ["points", "loops", "racks"]) &&
    Array.isArray(h.triggers) &&
    typeof h.spec === "object" &&
    typeof h.names === "object"
  );
}

/** Parses the header line alone (for a listing): the first line, bounded. */
export function parseHeader(bytes: Buffer, file: string): { header: RecordingHeader; bodyAt: number } {
  const nl = bytes.subarray(0, MAX_HEADER_BYTES).indexOf(0x0a);
  if (nl < 0) throw new Error(`${file}: not a flight recording (no header line within ${MAX_HEADER_BYTES} bytes)`);
  let header: unknown;
  try {
    header = JSON.parse(bytes.subarray(0, nl).toString("utf8"));
  } catch (err) {
    throw new Error(`${file}: not a flight recording (header: ${(err as Error).message})`, { cause: err });
  }
  if (!isHeader(header)) throw new Error(`${file}: not a flight recording of this format (${RECORDING_FORMAT})`);
  if (header.version !== RECORDING_VERSION) throw new Error(`${file}: recording format version ${header.version}; this build reads version ${RECORDING_VERSION}`);
  return { header, bodyAt: nl + 1 };
}

/** A whole recording from its bytes; throws, naming the file, when it is not one or is cut short. */
export function decodeRecording(bytes: Buffer, file: string): Recording {
  const { header, bodyAt } = parseHeader(bytes, file);
  const { points, loops, racks } = header.sizes;
  const l = recordLayout(points, loops, racks);
  const parts = [header.count * l.f64Width * 8, header.count * l.i32Width * 4, header.checkpoints * l.checkpointF64 * 8, header.checkpoints * l.checkpointI32 * 4];
  const want = parts.reduce((a, b) => a + b, 0);
  if (bytes.length - bodyAt !== want) throw new Error(`${file}: ${bytes.length - bodyAt} bytes after the header, ${want} expected: the file is damaged or cut short`);
  let at = bodyAt;
  // copies: a view straight into the file's buffer could be misaligned for its element size
  const take = <T extends Float64Array | Int32Array>(n: number, make: (b: ArrayBuffer) => T): T => {
    const copy = new Uint8Array(n);
    copy.set(bytes.subarray(at, at + n));
    at += n;
    return make(copy.buffer);
  };
  const f64 = take(parts[0], (b) => new Float64Array(b));
  const i32 = take(parts[1], (b) => new Int32Array(b));
  const ckF64 = take(parts[2], (b) => new Float64Array(b));
  const ckI32 = take(parts[3], (b) => new Int32Array(b));
  return { header, window: { firstSeq: header.firstSeq, count: header.count, f64, i32, checkpoints: { count: header.checkpoints, f64: ckF64, i32: ckI32 } } };
}

export async function readRecording(file: string): Promise<Recording> {
  const size = statSync(file).size;
  if (size > MAX_RECORDING_BYTES) throw new Error(`${file}: ${size} bytes, more than any recording (${MAX_RECORDING_BYTES})`);
  return decodeRecording(await readFile(file), file);
}

/** records copied out of the ring per turn of the event loop: ~0.5 MB of f64 rows for the demo pod */
const CHUNK_RECORDS = 512;

/**
 * Writes records [from, to) straight from the ring to a recording file, a chunk at a time:
 * the main thread never holds the window whole (11 MB for the demo pod's default) and never
 * stops for more than one chunk's copy. Written to a temporary file, synced, renamed over, the directory synced. Throws if the
 * worker overwrote records before they were written (the ring's slack is a second).
 */
export async function streamRecording(dir: string, head: Omit<RecordingHeader, "firstSeq" | "count" | "checkpoints">, ring: FlightRingReader, from: number, to: number): Promise<{ file: string; count: number }> {
  const { start, end } = ring.span(from, to);
  const ck = ring.checkpoints(start, end);
  const header: RecordingHeader = { ...head, firstSeq: start, count: end - start, checkpoints: ck.count };
  const file = join(dir, `${header.id}${RECORDING_SUFFIX}`);
  const tmp = `${file}.tmp`;
  const l = ring.layout;
  const fh = await open(tmp, "w", 0o600);
  try {
    await fh.write(Buffer.from(JSON.stringify(header) + "\n", "utf8"));
    const f = new Float64Array(CHUNK_RECORDS * l.f64Width);
    const i = new Int32Array(CHUNK_RECORDS * l.i32Width);
    const lost = (): Error => new Error("the ring moved past the window before it was written: the main thread was held up for over a second");
    for (let seq = start; seq < end; seq += CHUNK_RECORDS) {
      const n = Math.min(CHUNK_RECORDS, end - seq);
      if (!ring.copyF64(seq, n, f)) throw lost();
      await fh.write(new Uint8Array(f.buffer, 0, n * l.f64Width * 8));
    }
    for (let seq = start; seq < end; seq += CHUNK_RECORDS) {
      const n = Math.min(CHUNK_RECORDS, end - seq);
      if (!ring.copyI32(seq, n, i)) throw lost();
      await fh.write(new Uint8Array(i.buffer, 0, n * l.i32Width * 4));
    }
    await fh.write(bytesOf(ck.f64));
    await fh.write(bytesOf(ck.i32));
    await fh.sync();
  } catch (err) {
    await fh.close();
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fh.close();
  await rename(tmp, file);
  await syncDirectoryInBackground(dir);
  return { file, count: header.count };
}

export interface RecordingEntry {
  id: string;
  file: string;
  bytes: number;
  header: RecordingHeader;
}

/** The recordings in a directory, oldest first (ids sort by time); unreadable files are listed in `bad`. */
/** The newest `n` of `entries` (oldest first, as listRecordings gives them), newest first, as summaries. */
export function recentSummaries(entries: readonly RecordingEntry[], n: number): { id: string; createdAt: string; triggers: string[]; ticks: number; complete: boolean; bytes: number }[] {
  return entries
    .slice(-n)
    .reverse()
    .map((r) => ({ id: r.id, createdAt: r.header.createdAt, triggers: r.header.triggers.map((t) => t.reason), ticks: r.header.count, complete: r.header.complete, bytes: r.bytes }));
}

export function listRecordings(dir: string): { recordings: RecordingEntry[]; bad: { file: string; why: string }[] } {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(RECORDING_SUFFIX));
  } catch {
    return { recordings: [], bad: [] };
  }
  const recordings: RecordingEntry[] = [];
  const bad: { file: string; why: string }[] = [];
  for (const n of names.sort()) {
    const file = join(dir, n);
    try {
      const head = Buffer.alloc(Math.min(MAX_HEADER_BYTES, statSync(file).size));
      const fd = openSync(file, "r");
      try {
        readSync(fd, head, 0, head.length, 0);
      } finally {
        closeSync(fd);
      }
      const { header } = parseHeader(head, file);
      recordings.push({ id: header.id, file, bytes: statSync(file).size, header });
    } catch (err) {
      bad.push({ file, why: (err as Error).message });
    }
  }
  return { recordings, bad };
}

/**
 * Whether a recording is only an operator's or the machine's timing (`operator:…`,
 * `alarm:control:overrun`): what goes first when the recordings are too many. A trip's is evidence.
 */
export function minorRecording(h: Pick<RecordingHeader, "triggers">): boolean {
  return h.triggers.every((t) => t.reason.startsWith("operator:") || t.reason === "alarm:control:overrun");
}

/**
 * Keeps `keep` recordings; returns the ids removed. The oldest minor ones go first, and a trip's
 * only when no minor one is left (issue #54: operators' and overrun recordings pushed out
 * leak-trip evidence). Leftover temporary files go too.
 */
export async function rotateRecordings(dir: string, keep: number): Promise<string[]> {
  const { recordings } = listRecordings(dir);
  const byPriority = [...recordings.filter((r) => minorRecording(r.header)), ...recordings.filter((r) => !minorRecording(r.header))];
  const gone = byPriority.slice(0, Math.max(0, recordings.length - keep));
  for (const r of gone) await unlink(r.file).catch(() => undefined);
  return gone.map((r) => r.id);
}

/** Removes temporary files a crash left mid-write (at start, before any write of ours). */
export function removeLeftovers(dir: string): void {
  try {
    for (const n of readdirSync(dir)) if (n.endsWith(`${RECORDING_SUFFIX}.tmp`)) unlinkSync(join(dir, n));
  } catch {
    // no directory yet
  }
}

/** The recording `id` (or a unique prefix of it) in `dir`. */
export function findRecording(dir: string, id: string): RecordingEntry {
  const { recordings } = listRecordings(dir);
  const exact = recordings.find((r) => r.id === id);
  if (exact !== undefined) return exact;
  const matches = recordings.filter((r) => r.id.startsWith(id));
  if (matches.length === 1) return matches[0];
  if (matches.length === 0) throw new Error(`no recording "${id}" in ${dir}`);
  throw new Error(`"${id}" matches ${matches.length} recordings: ${matches.map((m) => m.id).join(", ")}`);
}
