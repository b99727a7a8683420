// Main-thread handle on the control worker: starts it, feeds samples and commands into the
// shared frames, reads outputs, reports lateness and health, stops it.
import { Worker } from "node:worker_threads";

import { MODE_CODE, type BankSpec, type LoopMode } from "../../hotpath-as/bank-config.js";
import { compileHotPath } from "../../hotpath-as/wasm-bank.js";
import { monoMs } from "../../lib/clock.js";
import { LogHistogram } from "../../lib/log-histogram.js";
import { allocateRing, FlightRingReader, type RingShape } from "./flight-ring.js";
import { CTRL, CTRL_F64, Frames, PATCH_BYTES } from "./frames.js";
import type { WorkerInput } from "./worker.js";
import { builtWorker } from "../../lib/worker-path.js";

export interface ControlOptions {
  periodMs: number;
  schedFifo: boolean;
  schedPriority: number;
  warmupTicks: number;
  /** the flight recorder's ring, sized by agent/recorder: the worker records into it from its first tick */
  recorder?: Pick<RingShape, "capacity" | "checkpointEvery" | "decimation">;
  onLog?: (level: "warn" | "error", message: string) => void;
}

export interface ControlOutputs {
  loopOut: number[];
  loopPv: number[];
  loopStatus: number[];
  rackState: number[];
  rackStatus: number[];
  rackSupplyOpen: number[];
  rackReturnOpen: number[];
  rackResetResult: number[];
  pointQuality: number[];
  tickMs: number;
}

/** A loop's relay autotune, read from the output frame (hot-path fields LI_TUNE*, LF_TUNE_*). */
export interface TuneState {
  /** TUNE_* */
  phase: number;
  /** TUNE_END_* of the last tuning (0 while one runs) */
  end: number;
  switches: number;
  /** the start count the worker has applied */
  applied: number;
  center: number;
  hysteresis: number;
  d: number;
  pv: number;
  out: number;
  tickMs: number;
}

export class ControlThread {
  readonly frames: Frames;
  /** the flight recorder's ring (null: no recorder) */
  readonly ring: FlightRingReader | null;
  private worker: Worker | null = null;
  /** the hot-path build the worker runs (set at start) */
  hotPath: string = "release";
  private exited: Promise<number> | null = null;
  private readonly hist: LogHistogram;

  constructor(
    private spec: BankSpec,
    private readonly o: ControlOptions,
  ) {
    this.frames = new Frames({ points: spec.points.length, loops: spec.loops.length, racks: spec.racks.length });
    this.hist = new LogHistogram(this.frames.lateness);
    const shape = o.recorder === undefined ? null : { ...this.frames.sizes, ...o.recorder };
    this.ring = shape === null ? null : new FlightRingReader(shape, allocateRing(shape));
    const f = this.frames;
    spec.loops.forEach((l, i) => {
      f.loopSp[i] = l.sp;
      f.loopMode[i] = MODE_CODE[l.mode ?? "Automatic"];
      f.loopManual[i] = NaN;
      f.loopOverride[i] = NaN;
    });
    f.pointValue.fill(NaN);
    f.pointTs.fill(-Infinity);
  }

  /** Starts the worker; resolves after its first tick (warm-up done), rejects if it fails. */
  async start(): Promise<void> {
    // compiled here, where a CPU without SIMD is noticed and logged; the worker receives the
    // compiled module (V8 shares its code between threads) rather than compiling it again
    const build = compileHotPath("release");
    this.hotPath = build.target;
    if (build.target !== "release") {
      this.o.onLog?.("warn", "this CPU cannot run WebAssembly SIMD (x86-64 needs SSE4.1): the control hot path runs its scalar build, which computes the same outputs more slowly");
    }
    const input: WorkerInput = {
      module: build.module,
      spec: this.spec,
      sizes: this.frames.sizes,
      buffers: this.frames.buffers,
      periodMs: this.o.periodMs,
      schedFifo: this.o.schedFifo,
      schedPriority: this.o.schedPriority,
      warmupTicks: this.o.warmupTicks,
      recorder: this.ring === null ? undefined : { shape: this.ring.shape, buffers: this.ring.buffers },
    };
    // The worker allocates almost nothing per tick: a small young generation keeps its RSS small
    // (under the daemon's own flags, --max-semi-space-size=1 sets it for every isolate anyway:
    // the flags override a worker's resourceLimits, agent/control/leak-thread.ts).
    const worker = new Worker(builtWorker(import.meta.url, "worker.js"), { workerData: input, resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 64 } });
    this.worker = worker;
    let failure: string | null = null;
    worker.on("message", (m: { kind: "warn" | "error"; message: string }) => {
      if (m.kind === "error") failure = m.message;
      this.o.onLog?.(m.kind, m.message);
    });
    worker.on("error", (err) => {
      failure = err.message;
      this.o.onLog?.("error", `control worker: ${err.message}`);
    });
    this.exited = new Promise((resolve) => worker.once("exit", resolve));
    const ready = Atomics.waitAsync(this.frames.ctrl, CTRL.READY, 0, 60_000);
    const outcome = await Promise.race([ready.async ? ready.value : Promise.resolve(ready.value), this.exited.then(() => "exited" as const)]);
    if (outcome !== "ok" && outcome !== "not-equal") throw new Error(`control worker did not start: ${failure ?? outcome}`);
  }

  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w === null) return;
    Atomics.store(this.frames.ctrl, CTRL.STOP, 1);
    this.frames.wake();
    const exited = this.exited ?? Promise.resolve(0);
    const timer = setTimeout(() => void w.terminate(), 2000);
    await exited;
    clearTimeout(timer);
  }

  // ---- inputs and commands -----------------------------------------------------------------

  writeSample(point: number, value: number, sourceTimeMs: number): void {
    this.frames.writeSample(point, value, sourceTimeMs);
  }

  /**
   * Asks the worker to tick now rather than at its next deadline: a safety input (a leak
   * sensor) has just changed, and its interlock should not wait up to a period. The cadence
   * is kept: the next regular tick still comes at its deadline.
   */
  tickNow(): void {
    this.frames.wake();
  }

  setSetpoint(loop: number, sp: number): void {
    this.frames.command((f) => {
      f.loopSp[loop] = sp;
    });
  }

  setMode(loop: number, mode: LoopMode, value?: number): void {
    this.frames.command((f) => {
      f.loopMode[loop] = MODE_CODE[mode];
      if (mode === "Manual") f.loopManual[loop] = value ?? f.loopOut[loop];
      if (mode === "Override") f.loopOverride[loop] = value ?? f.loopOut[loop];
    });
  }

  setManualIsolate(rack: number, isolate: boolean): void {
    this.frames.command((f) => {
      f.rackManualIsolate[rack] = isolate ? 1 : 0;
    });
  }

  /** Requests a leak-latch reset; the worker consumes it at its next tick (see rackResetResult). */
  requestReset(rack: number): void {
    this.frames.command((f) => {
      f.rackResetCount[rack]++;
    });
  }

  /** Puts a rack back into its latched leak isolation (after a restart); the hot path proves it again. */
  restoreLatch(rack: number): void {
    this.frames.command((f) => {
      f.rackRestoreCount[rack]++;
    });
  }

  /** Starts a relay autotune of `loop` at the worker's next tick (the hot path runs it and ends it on its own checks). */
  startTune(loop: number): number {
    let n = 0;
    this.frames.command((f) => {
      n = ++f.loopTuneStarts[loop];
    });
    return n;
  }

  /** Stops a relay autotune of `loop` at the worker's next tick, if one runs: the loop returns to its mode. */
  stopTune(loop: number): void {
    this.frames.command((f) => {
      f.loopTuneStops[loop]++;
    });
  }

  /** A loop's relay autotune as the last tick left it, with its PV and output; undefined if the frame could not be read. */
  tuneState(loop: number): TuneState | undefined {
    return this.frames.readOutputs((f) => ({
      phase: f.loopTune[loop],
      end: f.loopTuneEnd[loop],
      switches: f.loopTuneSwitches[loop],
      applied: f.loopTuneApplied[loop],
      center: f.loopTuneCenter[loop],
      hysteresis: f.loopTuneHyst[loop],
      d: f.loopTuneD[loop],
      pv: f.loopPv[loop],
      out: f.loopOut[loop],
      tickMs: f.ctrlF[CTRL_F64.LAST_TICK_MS],
    }));
  }

  /** Replaces the bank's config (gains, limits, checks) in place, keeping run-time state. */
  patch(spec: BankSpec): void {
    const bytes = Buffer.from(JSON.stringify(spec), "utf8");
    if (bytes.length > PATCH_BYTES) throw new Error(`bank config of ${bytes.length} bytes exceeds the ${PATCH_BYTES}-byte patch region`);
    if (spec.loops.length !== this.spec.loops.length || spec.points.length !== this.spec.points.length || spec.racks.length !== this.spec.racks.length) {
      throw new Error("a patch cannot change the number of loops, points or racks");
    }
    this.frames.patch.set(bytes);
    Atomics.store(this.frames.ctrl, CTRL.PATCH_LEN, bytes.length);
    Atomics.add(this.frames.ctrl, CTRL.PATCH_GEN, 1);
    this.spec = spec;
  }

  /** the bank's config now (the last patch's) */
  get bankSpec(): BankSpec {
    return this.spec;
  }

  patchApplied(): boolean {
    return Atomics.load(this.frames.ctrl, CTRL.PATCH_APPLIED) === Atomics.load(this.frames.ctrl, CTRL.PATCH_GEN);
  }

  // ---- outputs and health ------------------------------------------------------------------

  outputs(): ControlOutputs | undefined {
    return this.frames.readOutputs((f) => ({
      loopOut: Array.from(f.loopOut),
      loopPv: Array.from(f.loopPv),
      loopStatus: Array.from(f.loopStatus),
      rackState: Array.from(f.rackState),
      rackStatus: Array.from(f.rackStatus),
      rackSupplyOpen: Array.from(f.rackSupplyOpen),
      rackReturnOpen: Array.from(f.rackReturnOpen),
      rackResetResult: Array.from(f.rackResetResult),
      pointQuality: Array.from(f.pointQuality),
      tickMs: f.ctrlF[CTRL_F64.LAST_TICK_MS],
    }));
  }

  /** Resolves when the worker signals an interlock change (or after timeoutMs). */
  async outputsChanged(timeoutMs: number): Promise<void> {
    await this.frames.interlockChange(this.frames.interlockCount(), timeoutMs);
  }

  get ticks(): number {
    return Atomics.load(this.frames.ctrl, CTRL.TICKS) >>> 0;
  }

  get overruns(): number {
    return Atomics.load(this.frames.ctrl, CTRL.OVERRUNS);
  }

  get skipped(): number {
    return Atomics.load(this.frames.ctrl, CTRL.SKIPPED);
  }

  /** loops that left live control for fail-safe, each time (the start excepted) */
  get failsafeEntries(): number {
    return Atomics.load(this.frames.ctrl, CTRL.FAILSAFE_ENTRIES);
  }

  /** ticks run before their deadline on tickNow() */
  get urgentTicks(): number {
    return Atomics.load(this.frames.ctrl, CTRL.URGENT_TICKS);
  }

  get schedFifo(): "on" | "refused" | "off" {
    const s = Atomics.load(this.frames.ctrl, CTRL.SCHED);
    return s === 1 ? "on" : s === -1 ? "refused" : "off";
  }

  get error(): number {
    return Atomics.load(this.frames.ctrl, CTRL.ERROR);
  }

  /** Age of the last completed tick, ms (Infinity before the first). */
  tickAgeMs(): number {
    const last = this.frames.ctrlF[CTRL_F64.LAST_TICK_MS];
    return last > 0 ? monoMs() - last : Infinity;
  }

  /** Healthy: the worker runs, ticked recently, and stopped on no error. */
  healthy(maxTickAgeMs: number): boolean {
    return this.worker !== null && this.error === 0 && this.tickAgeMs() <= maxTickAgeMs;
  }

  /** Tick lateness in µs at quantile q, from the worker's histogram. */
  latenessUs(q: number): number {
    return this.hist.percentile(q);
  }

  get maxLatenessUs(): number {
    return this.frames.ctrlF[CTRL_F64.MAX_LATE_US];
  }

  latenessHistogram(): LogHistogram {
    return this.hist;
  }

  statusOf(loop: number): number {
    return this.frames.loopStatus[loop];
  }
}

