// The flight recorder's ring: every tick's bank inputs and outputs, and now and then the whole
// bank's state, in shared memory. The control worker writes it (FlightRingWriter, a few hundred
// element copies per tick and no allocation); the main thread copies a window out of it, a chunk
// at a time, when a trigger fires (FlightRingReader, and streamRecording in recording-file.ts).
// Nothing crosses by message: a recording must not cost the tick a postMessage, and must survive a
// main thread that is busy when the trip happens.
//
// One record per recorded tick, in two rows (f64 and i32) at fixed offsets:
//   f64: tickMs, dtS, point value[P], point ts[P], command sp/manual/override[L], out[L], pv[L]
//   i32: seq, flags, written[W], command mode[L], manualIsolate[R], resetEdge[R], restoreEdge[R],
//        tuneEdge[L] (a relay autotune started or stopped), loop status[L], rack state/status/supplyOpen/returnOpen/resetResult[R], quality[P]
// where the inputs are what the bank received before the step (the samples the worker wrote,
// `written` saying which, and the command frame when FLAG_COMMANDS says it was applied) and the
// outputs what the step produced. A checkpoint is the bank's every field, over the used slots,
// as it stood before tick `seq` received its inputs: replay starts from one (flight-replay.ts).
import { LOOP_F64_FIELDS, LOOP_I32_FIELDS, POINT_F64_FIELDS, POINT_I32_FIELDS, RACK_F64_FIELDS, RACK_I32_FIELDS, type BankViews } from "../../hotpath-as/views.js";
import type { CommandValues } from "./bank-inputs.js";

/** the worker applied the command frame before this tick's step */
export const FLAG_COMMANDS = 1;
/** the worker applied a tuning patch before this tick's step (the file's spec is the patched one) */
export const FLAG_PATCH = 2;
/** an urgent tick (a safety input changed), off the cadence */
export const FLAG_URGENT = 4;

export interface RingShape {
  points: number;
  loops: number;
  racks: number;
  /** records the ring holds */
  capacity: number;
  /** a checkpoint every this many recorded ticks; 0 = none (a decimated ring cannot be replayed) */
  checkpointEvery: number;
  /** one tick in this many is recorded */
  decimation: number;
}

/** Offsets of each field in a record's rows, and the rows' widths. */
export interface RecordLayout {
  f64Width: number;
  i32Width: number;
  f: { tickMs: number; dtS: number; value: number; ts: number; sp: number; manual: number; override: number; out: number; pv: number };
  i: {
    seq: number;
    flags: number;
    written: number;
    mode: number;
    manualIsolate: number;
    resetEdge: number;
    restoreEdge: number;
    tuneEdge: number;
    loopStatus: number;
    rackState: number;
    rackStatus: number;
    supplyOpen: number;
    returnOpen: number;
    resetResult: number;
    quality: number;
  };
  /** words of the `written` bit set */
  words: number;
  checkpointF64: number;
  checkpointI32: number;
}

export function recordLayout(points: number, loops: number, racks: number): RecordLayout {
  const P = points;
  const Lc = loops;
  const R = racks;
  const words = Math.ceil(P / 32);
  let o = 0;
  const at = (n: number): number => {
    const here = o;
    o += n;
    return here;
  };
  const f = { tickMs: at(1), dtS: at(1), value: at(P), ts: at(P), sp: at(Lc), manual: at(Lc), override: at(Lc), out: at(Lc), pv: at(Lc) };
  const f64Width = o;
  o = 0;
  const i = {
    seq: at(1),
    flags: at(1),
    written: at(words),
    mode: at(Lc),
    manualIsolate: at(R),
    resetEdge: at(R),
    restoreEdge: at(R),
    tuneEdge: at(Lc),
    loopStatus: at(Lc),
    rackState: at(R),
    rackStatus: at(R),
    supplyOpen: at(R),
    returnOpen: at(R),
    resetResult: at(R),
    quality: at(P),
  };
  const i32Width = o;
  const nF = (fields: object): number => Object.keys(fields).length;
  return {
    f64Width,
    i32Width,
    f,
    i,
    words,
    checkpointF64: nF(LOOP_F64_FIELDS) * Lc + nF(POINT_F64_FIELDS) * P + nF(RACK_F64_FIELDS) * R,
    // its own seq first, then the fields, then the points' dirty bits (the step reads them)
    checkpointI32: 1 + nF(LOOP_I32_FIELDS) * Lc + nF(POINT_I32_FIELDS) * P + nF(RACK_I32_FIELDS) * R + words,
  };
}

/** Checkpoint slots a ring keeps: enough that one precedes the oldest record it still holds. */
export function checkpointSlots(s: RingShape): number {
  return s.checkpointEvery === 0 ? 0 : Math.ceil(s.capacity / s.checkpointEvery) + 2;
}

export interface RingBuffers {
  header: SharedArrayBuffer;
  f64: SharedArrayBuffer;
  i32: SharedArrayBuffer;
  ckF64: SharedArrayBuffer;
  ckI32: SharedArrayBuffer;
}

const H_WRITTEN = 0; // records completed (the next record's seq)

export function allocateRing(s: RingShape): RingBuffers {
  const l = recordLayout(s.points, s.loops, s.racks);
  const k = checkpointSlots(s);
  const b = {
    header: new SharedArrayBuffer(16),
    f64: new SharedArrayBuffer(s.capacity * l.f64Width * 8),
    i32: new SharedArrayBuffer(s.capacity * l.i32Width * 4),
    ckF64: new SharedArrayBuffer(Math.max(1, k * l.checkpointF64) * 8),
    ckI32: new SharedArrayBuffer(Math.max(1, k * l.checkpointI32) * 4),
  };
  // every page touched now, at start: the worker's first pass over the ring must not take a
  // page fault per 4 KB in its ticks, and the daemon's RSS is the same from start to end
  for (const buf of [b.f64, b.i32, b.ckF64, b.ckI32]) new Uint8Array(buf).fill(0);
  // no checkpoint yet: a slot's seq is -1 until the worker has written one there
  const ck = new Int32Array(b.ckI32);
  for (let j = 0; j < k; j++) ck[j * l.checkpointI32] = -1;
  return b;
}

/** Bytes of shared memory a ring of this shape takes. */
export function ringBytes(s: RingShape): number {
  const l = recordLayout(s.points, s.loops, s.racks);
  const k = checkpointSlots(s);
  return s.capacity * (l.f64Width * 8 + l.i32Width * 4) + k * (l.checkpointF64 * 8 + l.checkpointI32 * 4);
}

/** The bank's fields over the used slots, in one fixed order: checkpoints are written and restored by it. */
function forEachField(v: BankViews, s: { points: number; loops: number; racks: number }, f64: (a: Float64Array, n: number) => void, i32: (a: Int32Array, n: number) => void): void {
  for (const k of Object.keys(LOOP_F64_FIELDS) as (keyof typeof LOOP_F64_FIELDS)[]) f64(v.loopF[k], s.loops);
  for (const k of Object.keys(POINT_F64_FIELDS) as (keyof typeof POINT_F64_FIELDS)[]) f64(v.pointF[k], s.points);
  for (const k of Object.keys(RACK_F64_FIELDS) as (keyof typeof RACK_F64_FIELDS)[]) f64(v.rackF[k], s.racks);
  for (const k of Object.keys(LOOP_I32_FIELDS) as (keyof typeof LOOP_I32_FIELDS)[]) i32(v.loopI[k], s.loops);
  for (const k of Object.keys(POINT_I32_FIELDS) as (keyof typeof POINT_I32_FIELDS)[]) i32(v.pointI[k], s.points);
  for (const k of Object.keys(RACK_I32_FIELDS) as (keyof typeof RACK_I32_FIELDS)[]) i32(v.rackI[k], s.racks);
}

/** Writes the bank's state into a checkpoint's rows (the i32 row's first slot is left for its seq). */
export function saveCheckpoint(v: BankViews, s: { points: number; loops: number; racks: number }, f64: Float64Array, i32: Int32Array): void {
  let fo = 0;
  let io = 1;
  forEachField(
    v,
    s,
    (a, n) => {
      f64.set(a.subarray(0, n), fo);
      fo += n;
    },
    (a, n) => {
      i32.set(a.subarray(0, n), io);
      io += n;
    },
  );
  const words = Math.ceil(s.points / 32);
  for (let w = 0; w < words; w++) i32[io + w] = v.pointDirty[w] | 0;
}

/** Puts a checkpoint's state back into a bank (already configured for the same counts). */
export function restoreCheckpoint(v: BankViews, s: { points: number; loops: number; racks: number }, f64: Float64Array, i32: Int32Array): void {
  let fo = 0;
  let io = 1;
  forEachField(
    v,
    s,
    (a, n) => {
      a.set(f64.subarray(fo, fo + n));
      fo += n;
    },
    (a, n) => {
      a.set(i32.subarray(io, io + n));
      io += n;
    },
  );
  const words = Math.ceil(s.points / 32);
  for (let w = 0; w < words; w++) v.pointDirty[w] = i32[io + w] >>> 0;
}

/** The worker's side: begin() before the tick's inputs, skipped() for a sample left unwritten, pre() before the step, post() after it. */
export class FlightRingWriter {
  private readonly l: RecordLayout;
  private readonly header: Int32Array;
  private readonly f64: Float64Array;
  private readonly i32: Int32Array;
  private readonly ckF64: Float64Array;
  private readonly ckI32: Int32Array;
  private readonly slots: number;
  private ticks = 0;
  private seq = 0;
  /** this tick is recorded */
  private on = false;
  private fo = 0;
  private io = 0;

  constructor(
    private readonly s: RingShape,
    b: RingBuffers,
  ) {
    this.l = recordLayout(s.points, s.loops, s.racks);
    this.header = new Int32Array(b.header);
    this.f64 = new Float64Array(b.f64);
    this.i32 = new Int32Array(b.i32);
    this.ckF64 = new Float64Array(b.ckF64);
    this.ckI32 = new Int32Array(b.ckI32);
    this.slots = checkpointSlots(s);
  }

  begin(v: BankViews): void {
    const s = this.s;
    this.on = this.ticks % s.decimation === 0;
    this.ticks++;
    if (!this.on) return;
    const seq = this.seq;
    const slot = seq % s.capacity;
    this.fo = slot * this.l.f64Width;
    this.io = slot * this.l.i32Width;
    // the seq first: a reader that copied this slot sees it moved, and drops the copy
    Atomics.store(this.i32, this.io + this.l.i.seq, seq);
    this.i32.fill(-1, this.io + this.l.i.written, this.io + this.l.i.written + this.l.words);
    if (s.checkpointEvery > 0 && seq % s.checkpointEvery === 0) {
      const k = (seq / s.checkpointEvery) % this.slots;
      const cf = this.ckF64.subarray(k * this.l.checkpointF64, (k + 1) * this.l.checkpointF64);
      const ci = this.ckI32.subarray(k * this.l.checkpointI32, (k + 1) * this.l.checkpointI32);
      Atomics.store(ci, 0, -1); // being written
      saveCheckpoint(v, s, cf, ci);
      Atomics.store(ci, 0, seq);
    }
  }

  /** Sample `point` was not written this tick (its seqlock was held): the bank kept the last one. */
  skipped(point: number): void {
    if (this.on) this.i32[this.io + this.l.i.written + (point >>> 5)] &= ~(1 << (point & 31));
  }

  // Plain element loops, not TypedArray.set over subarrays: a subarray is an object allocated per
  // call, and set() from the bank's memory into shared memory takes a slow path. With set() the
  // recorder cost the demo pod's tick 3.9 µs (5.6 against 1.7 µs bare, BENCHMARKS.md); loops
  // copy the same ~300 numbers with no allocation at all.
  pre(v: BankViews, c: CommandValues, flags: number, resetEdge: Int32Array, restoreEdge: Int32Array, tuneEdge: Int32Array, tickMs: number, dtS: number): void {
    if (!this.on) return;
    const { f, i } = this.l;
    const F = this.f64;
    const I = this.i32;
    const fo = this.fo;
    const io = this.io;
    const P = this.s.points;
    const Lc = this.s.loops;
    const R = this.s.racks;
    F[fo + f.tickMs] = tickMs;
    F[fo + f.dtS] = dtS;
    const value = v.pointF.value;
    const ts = v.pointF.ts;
    for (let k = 0; k < P; k++) {
      F[fo + f.value + k] = value[k];
      F[fo + f.ts + k] = ts[k];
    }
    for (let k = 0; k < Lc; k++) {
      F[fo + f.sp + k] = c.loopSp[k];
      F[fo + f.manual + k] = c.loopManual[k];
      F[fo + f.override + k] = c.loopOverride[k];
      I[io + i.mode + k] = c.loopMode[k];
      I[io + i.tuneEdge + k] = tuneEdge[k];
    }
    for (let r = 0; r < R; r++) {
      I[io + i.manualIsolate + r] = c.rackManualIsolate[r];
      I[io + i.resetEdge + r] = resetEdge[r];
      I[io + i.restoreEdge + r] = restoreEdge[r];
    }
    I[io + i.flags] = flags;
  }

  post(v: BankViews): void {
    if (!this.on) return;
    const { f, i } = this.l;
    const F = this.f64;
    const I = this.i32;
    const fo = this.fo;
    const io = this.io;
    const P = this.s.points;
    const Lc = this.s.loops;
    const R = this.s.racks;
    const { out, pv } = v.loopF;
    const status = v.loopI.status;
    for (let k = 0; k < Lc; k++) {
      F[fo + f.out + k] = out[k];
      F[fo + f.pv + k] = pv[k];
      I[io + i.loopStatus + k] = status[k];
    }
    const rk = v.rackI;
    for (let r = 0; r < R; r++) {
      I[io + i.rackState + r] = rk.state[r];
      I[io + i.rackStatus + r] = rk.status[r];
      I[io + i.supplyOpen + r] = rk.supplyOpen[r];
      I[io + i.returnOpen + r] = rk.returnOpen[r];
      I[io + i.resetResult + r] = rk.resetResult[r];
    }
    const quality = v.pointI.quality;
    for (let k = 0; k < P; k++) I[io + i.quality + k] = quality[k];
    this.seq++;
    Atomics.store(this.header, H_WRITTEN, this.seq);
  }
}

/** A window of the ring as a recording file holds it: records [firstSeq, firstSeq + count), and the checkpoints among them. */
export interface RingWindow {
  firstSeq: number;
  count: number;
  f64: Float64Array;
  i32: Int32Array;
  /** each checkpoint's own seq is the first slot of its i32 row */
  checkpoints: { count: number; f64: Float64Array; i32: Int32Array };
}

/** The main thread's side: how far the worker has written, and copies of windows. */
export class FlightRingReader {
  readonly layout: RecordLayout;
  private readonly header: Int32Array;
  private readonly f64: Float64Array;
  private readonly i32: Int32Array;
  private readonly ckF64: Float64Array;
  private readonly ckI32: Int32Array;
  private readonly slots: number;

  constructor(
    readonly shape: RingShape,
    readonly buffers: RingBuffers,
  ) {
    this.layout = recordLayout(shape.points, shape.loops, shape.racks);
    this.header = new Int32Array(buffers.header);
    this.f64 = new Float64Array(buffers.f64);
    this.i32 = new Int32Array(buffers.i32);
    this.ckF64 = new Float64Array(buffers.ckF64);
    this.ckI32 = new Int32Array(buffers.ckI32);
    this.slots = checkpointSlots(shape);
  }

  /** records completed: the seq the next one will have */
  written(): number {
    return Atomics.load(this.header, H_WRITTEN);
  }

  /** The part of records [from, to) the ring still holds (to at most written()). */
  span(from: number, to: number): { start: number; end: number } {
    const end = Math.min(to, this.written());
    // the slot after the newest may be being rewritten now: it is not counted as held
    return { start: Math.min(end, Math.max(from, end - this.shape.capacity + 1, 0)), end };
  }

  /**
   * Copies `n` records' f64 rows from `seq` on into `dst` (n × f64Width). False when the worker
   * overwrote any of them while they were copied: the worker stores a slot's new seq before it
   * writes a byte of the slot, so a seq still in place after the copy vouches for the rows.
   */
  copyF64(seq: number, n: number, dst: Float64Array): boolean {
    const W = this.layout.f64Width;
    for (let k = 0; k < n; k++) {
      const slot = (seq + k) % this.shape.capacity;
      dst.set(this.f64.subarray(slot * W, (slot + 1) * W), k * W);
    }
    return this.stillThere(seq, n);
  }

  /** As copyF64, for the i32 rows (n × i32Width). */
  copyI32(seq: number, n: number, dst: Int32Array): boolean {
    const W = this.layout.i32Width;
    for (let k = 0; k < n; k++) {
      const slot = (seq + k) % this.shape.capacity;
      dst.set(this.i32.subarray(slot * W, (slot + 1) * W), k * W);
      if (dst[k * W + this.layout.i.seq] !== seq + k) return false;
    }
    return this.stillThere(seq, n);
  }

  private stillThere(seq: number, n: number): boolean {
    const W = this.layout.i32Width;
    for (let k = 0; k < n; k++) {
      if (Atomics.load(this.i32, ((seq + k) % this.shape.capacity) * W + this.layout.i.seq) !== seq + k) return false;
    }
    return true;
  }

  /** The checkpoints taken at records [from, to), in order. */
  checkpoints(from: number, to: number): RingWindow["checkpoints"] {
    const { checkpointF64: CF, checkpointI32: CI } = this.layout;
    const rowsF: Float64Array[] = [];
    const rowsI: Int32Array[] = [];
    for (let k = 0; k < this.slots; k++) {
      const seq = Atomics.load(this.ckI32, k * CI);
      if (seq < from || seq >= to) continue;
      const f = this.ckF64.slice(k * CF, (k + 1) * CF);
      const i = this.ckI32.slice(k * CI, (k + 1) * CI);
      if (Atomics.load(this.ckI32, k * CI) !== seq) continue; // rewritten under the copy
      rowsF.push(f);
      rowsI.push(i);
    }
    const order = rowsI.map((r, k) => [r[0], k] as const).sort((a, b) => a[0] - b[0]);
    const f64 = new Float64Array(order.length * CF);
    const i32 = new Int32Array(order.length * CI);
    order.forEach(([, k], j) => {
      f64.set(rowsF[k], j * CF);
      i32.set(rowsI[k], j * CI);
    });
    return { count: order.length, f64, i32 };
  }
}
