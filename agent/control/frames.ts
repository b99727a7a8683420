// The SharedArrayBuffer frames between the main thread and the control worker.
//
// A synchronous worker loop never processes postMessage, so everything crosses through shared
// memory and Atomics:
//   sensor frame   main -> worker   per-point value + source time, each behind its own seqlock
//   command frame  main -> worker   setpoints, modes, manual/override values, isolate, reset,
//                                   relay autotune start/stop, behind one seqlock (CMD_SEQ odd
//                                   while the main thread writes it); the worker copies it whole
//                                   when the sequence number moves, and applies and records the copy
//   output frame   worker -> main   loop outputs and status, rack isolation state, point quality,
//                                   behind one seqlock; Atomics.notify when an interlock changed
//   control words  both             stop, wake, ready, tick counter, lateness histogram
import { LOG_HISTOGRAM_BUCKETS } from "../../lib/log-histogram.js";

export const CTRL = {
  STOP: 0,
  WAKE: 1, // bumped to wake the worker: to stop, or to tick now because a safety input changed
  OUT_SEQ: 2,
  CMD_SEQ: 3, // the command frame's seqlock: odd while the main thread writes it
  TICKS: 4,
  READY: 5,
  OUT_CHANGED: 6,
  SCHED: 7, // 0 not tried, 1 SCHED_FIFO, -1 refused
  OVERRUNS: 8, // ticks that started more than one period late
  SKIPPED: 9, // periods skipped to catch up after a long stall
  ERROR: 10, // non-zero: the worker stopped on an error
  PATCH_GEN: 11, // bank config patch generation (SIGHUP reload)
  PATCH_LEN: 12,
  PATCH_APPLIED: 13,
  URGENT_TICKS: 14, // ticks run before their deadline because a safety input changed
  FAILSAFE_ENTRIES: 15, // loops that went from live control into fail-safe, counted each time
  COUNT: 16,
} as const;

export const CTRL_F64 = {
  LAST_TICK_MS: 0, // monotonic ms of the last completed tick
  MAX_LATE_US: 1,
  STEP_NS_LAST: 2,
  COUNT: 4,
} as const;

export const PATCH_BYTES = 256 * 1024;

export interface FrameSizes {
  points: number;
  loops: number;
  racks: number;
}

type AnyBuffer = SharedArrayBuffer;

/**
 * The worker's own copy of the command frame, taken whole behind its seqlock. The worker applies
 * this copy and the flight recorder records it: reading the shared frame twice (once to apply,
 * once to record) let a command the main thread wrote in between be recorded for a tick that had
 * applied the one before, and the replay then differed from the run (a CI run showed it).
 */
export class CommandCopy {
  readonly loopSp: Float64Array;
  readonly loopManual: Float64Array;
  readonly loopOverride: Float64Array;
  readonly loopMode: Int32Array;
  readonly rackManualIsolate: Int32Array;
  readonly rackResetCount: Int32Array;
  readonly rackRestoreCount: Int32Array;
  readonly loopTuneStarts: Int32Array;
  readonly loopTuneStops: Int32Array;

  constructor(sizes: FrameSizes) {
    this.loopSp = new Float64Array(sizes.loops);
    this.loopManual = new Float64Array(sizes.loops);
    this.loopOverride = new Float64Array(sizes.loops);
    this.loopMode = new Int32Array(sizes.loops);
    this.rackManualIsolate = new Int32Array(sizes.racks);
    this.rackResetCount = new Int32Array(sizes.racks);
    this.rackRestoreCount = new Int32Array(sizes.racks);
    this.loopTuneStarts = new Int32Array(sizes.loops);
    this.loopTuneStops = new Int32Array(sizes.loops);
  }
}

/** Typed views over the shared frames; both threads construct the same views from the buffers. */
export class Frames {
  readonly ctrl: Int32Array;
  readonly ctrlF: Float64Array;
  readonly lateness: Int32Array;
  // sensor frame
  readonly pointValue: Float64Array;
  readonly pointTs: Float64Array;
  readonly pointSeq: Int32Array;
  // command frame
  readonly loopSp: Float64Array;
  readonly loopManual: Float64Array;
  readonly loopOverride: Float64Array;
  readonly loopMode: Int32Array;
  readonly rackManualIsolate: Int32Array;
  readonly rackResetCount: Int32Array;
  readonly rackRestoreCount: Int32Array;
  /** relay autotune requests per loop: a start when loopTuneStarts moves, a stop when loopTuneStops does */
  readonly loopTuneStarts: Int32Array;
  readonly loopTuneStops: Int32Array;
  // output frame
  readonly loopOut: Float64Array;
  readonly loopPv: Float64Array;
  readonly loopStatus: Int32Array;
  readonly rackState: Int32Array;
  readonly rackStatus: Int32Array;
  readonly rackSupplyOpen: Int32Array;
  readonly rackReturnOpen: Int32Array;
  readonly rackResetResult: Int32Array;
  readonly pointQuality: Int32Array;
  /** relay autotune per loop: TUNE_* phase, TUNE_END_* of the last one, relay switches */
  readonly loopTune: Int32Array;
  readonly loopTuneEnd: Int32Array;
  readonly loopTuneSwitches: Int32Array;
  /** the tune start count the worker has applied (a start's state is in the frame once it equals loopTuneStarts) */
  readonly loopTuneApplied: Int32Array;
  /** the relay's centre (PV), hysteresis (PV) and amplitude (output) */
  readonly loopTuneCenter: Float64Array;
  readonly loopTuneHyst: Float64Array;
  readonly loopTuneD: Float64Array;
  readonly patch: Uint8Array;

  constructor(
    readonly sizes: FrameSizes,
    readonly buffers: { ctrl: AnyBuffer; data: AnyBuffer } = Frames.allocate(sizes),
  ) {
    const { points: P, loops: L, racks: R } = sizes;
    this.ctrl = new Int32Array(buffers.ctrl, 0, CTRL.COUNT);
    this.ctrlF = new Float64Array(buffers.ctrl, CTRL.COUNT * 4, CTRL_F64.COUNT);
    this.lateness = new Int32Array(buffers.ctrl, CTRL.COUNT * 4 + CTRL_F64.COUNT * 8, LOG_HISTOGRAM_BUCKETS);
    let off = 0;
    const f64 = (n: number): Float64Array => {
      const a = new Float64Array(buffers.data, off, n);
      off += n * 8;
      return a;
    };
    const i32 = (n: number): Int32Array => {
      const a = new Int32Array(buffers.data, off, n);
      off += Math.ceil((n * 4) / 8) * 8;
      return a;
    };
    this.pointValue = f64(P);
    this.pointTs = f64(P);
    this.loopSp = f64(L);
    this.loopManual = f64(L);
    this.loopOverride = f64(L);
    this.loopOut = f64(L);
    this.loopPv = f64(L);
    this.loopTuneCenter = f64(L);
    this.loopTuneHyst = f64(L);
    this.loopTuneD = f64(L);
    this.pointSeq = i32(P);
    this.loopMode = i32(L);
    this.rackManualIsolate = i32(R);
    this.rackResetCount = i32(R);
    this.rackRestoreCount = i32(R);
    this.loopStatus = i32(L);
    this.rackState = i32(R);
    this.rackStatus = i32(R);
    this.rackSupplyOpen = i32(R);
    this.rackReturnOpen = i32(R);
    this.rackResetResult = i32(R);
    this.pointQuality = i32(P);
    this.loopTuneStarts = i32(L);
    this.loopTuneStops = i32(L);
    this.loopTune = i32(L);
    this.loopTuneEnd = i32(L);
    this.loopTuneSwitches = i32(L);
    this.loopTuneApplied = i32(L);
    this.patch = new Uint8Array(buffers.data, off, PATCH_BYTES);
  }

  static allocate(s: FrameSizes): { ctrl: AnyBuffer; data: AnyBuffer } {
    const ctrlBytes = CTRL.COUNT * 4 + CTRL_F64.COUNT * 8 + LOG_HISTOGRAM_BUCKETS * 4;
    const i32Bytes = (n: number): number => Math.ceil((n * 4) / 8) * 8; // keeps the next array 8-aligned
    const dataBytes = (2 * s.points + 8 * s.loops) * 8 + 2 * i32Bytes(s.points) + 8 * i32Bytes(s.loops) + 8 * i32Bytes(s.racks) + PATCH_BYTES;
    return { ctrl: new SharedArrayBuffer(ctrlBytes), data: new SharedArrayBuffer(dataBytes) };
  }

  // ---- main side ---------------------------------------------------------------------------

  /** Writes one sample behind the point's seqlock (odd while writing). */
  writeSample(point: number, value: number, ts: number): void {
    Atomics.add(this.pointSeq, point, 1);
    this.pointValue[point] = value;
    this.pointTs[point] = ts;
    Atomics.add(this.pointSeq, point, 1);
  }

  /** Wakes the worker to tick now (a safety input changed) or to see its stop flag. */
  wake(): void {
    Atomics.add(this.ctrl, CTRL.WAKE, 1);
    Atomics.notify(this.ctrl, CTRL.WAKE);
  }

  /** The count of interlock changes the worker has signalled; pass it to interlockChange(). */
  interlockCount(): number {
    return Atomics.load(this.ctrl, CTRL.OUT_CHANGED);
  }

  /**
   * Resolves once the worker has signalled an interlock change since `seen` was read (at once if
   * it already has), or after timeoutMs. Every waiting thread is woken: the main thread's
   * actuator pass and the leak thread's isolation writes.
   */
  async interlockChange(seen: number, timeoutMs: number): Promise<void> {
    const w = Atomics.waitAsync(this.ctrl, CTRL.OUT_CHANGED, seen, timeoutMs);
    if (w.async) await w.value;
  }

  /**
   * Writes the command frame behind its seqlock and publishes it: the worker applies it at its
   * next tick, whole. A tick that comes while `write` runs sees an odd sequence number and applies
   * nothing (the frame waits one tick), so a mode and its manual value always arrive together.
   */
  command(write: (f: this) => void): void {
    Atomics.add(this.ctrl, CTRL.CMD_SEQ, 1);
    try {
      write(this);
    } finally {
      Atomics.add(this.ctrl, CTRL.CMD_SEQ, 1);
    }
  }

  /**
   * Copies the command frame published as sequence number `seq` into `into`: false if it is being
   * written, or was rewritten during the copy (the caller tries again at its next tick).
   */
  copyCommands(seq: number, into: CommandCopy): boolean {
    if (seq & 1) return false;
    into.loopSp.set(this.loopSp);
    into.loopManual.set(this.loopManual);
    into.loopOverride.set(this.loopOverride);
    into.loopMode.set(this.loopMode);
    into.rackManualIsolate.set(this.rackManualIsolate);
    into.rackResetCount.set(this.rackResetCount);
    into.rackRestoreCount.set(this.rackRestoreCount);
    into.loopTuneStarts.set(this.loopTuneStarts);
    into.loopTuneStops.set(this.loopTuneStops);
    return Atomics.load(this.ctrl, CTRL.CMD_SEQ) === seq;
  }

  /**
   * Reads the output frame consistently (retries while the worker is writing it). The retries are
   * bounded by time, not by count: a hundred quick spins can all fall inside one write of the
   * frame and give up with nothing (a loaded CI machine showed it); the worker's write takes
   * microseconds, so 2 ms of retries only fails if the worker is stuck mid-write.
   */
  readOutputs<T>(read: (f: Frames) => T): T | undefined {
    const deadline = performance.now() + 2;
    do {
      const s1 = Atomics.load(this.ctrl, CTRL.OUT_SEQ);
      if (s1 & 1) continue;
      const v = read(this);
      if (Atomics.load(this.ctrl, CTRL.OUT_SEQ) === s1) return v;
    } while (performance.now() < deadline);
    return undefined;
  }
}
