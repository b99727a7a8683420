// The control worker: owns the WASM hot path and ticks it on absolute deadlines.
//
// It runs a synchronous loop (Atomics.wait to the next deadline), so it never processes
// postMessage: all traffic is in the shared frames (frames.ts). A blocked or busy main thread
// therefore cannot delay a tick. This thread and the leak thread (leak-worker.ts) are raised to
// SCHED_FIFO, where permitted.
import { writeFileSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import * as L from "../../hotpath-as/assembly/layout.js";
import { loadBank, writeSample, type BankSpec } from "../../hotpath-as/bank-config.js";
import { WasmHotPath } from "../../hotpath-as/wasm-bank.js";
import { monoMs } from "../../lib/clock.js";
import { LogHistogram } from "../../lib/log-histogram.js";
import { inFailsafe } from "../../pod/status-words.js";
import { InterlockChangeDetector } from "../../pod/wiring.js";
import { applyCommands, applyPatch, TUNE_EDGE_NONE, TUNE_EDGE_START, TUNE_EDGE_STOP } from "./bank-inputs.js";
import { FLAG_COMMANDS, FLAG_PATCH, FLAG_URGENT, FlightRingWriter, type RingBuffers, type RingShape } from "./flight-ring.js";
import { CommandCopy, CTRL, CTRL_F64, Frames, type FrameSizes } from "./frames.js";
import { raiseThreadToFifo } from "./sched-fifo.js";
import { warmupSamples, warmupSpec } from "./warmup.js";

export interface WorkerInput {
  /** the hot path build this CPU runs, compiled once on the main thread (compileHotPath) */
  module: WebAssembly.Module;
  spec: BankSpec;
  sizes: FrameSizes;
  buffers: { ctrl: SharedArrayBuffer; data: SharedArrayBuffer };
  periodMs: number;
  schedFifo: boolean;
  schedPriority: number;
  warmupTicks: number;
  /** the flight recorder's ring (flight-ring.ts), or none */
  recorder?: { shape: RingShape; buffers: RingBuffers };
}

/** The shortest dt a tick integrates over, ms: the step refuses dt <= 0. */
const MIN_DT_MS = 0.01;

function post(kind: string, message: string): void {
  parentPort?.postMessage({ kind, message });
}

/** SCHED_FIFO for this thread only (sched-fifo.ts); a refusal is reported, not fatal. */
function raisePriority(priority: number): boolean {
  const refused = raiseThreadToFifo(priority);
  if (refused !== null) post("warn", refused);
  return refused === null;
}

function run(input: WorkerInput): void {
  const f = new Frames(input.sizes, input.buffers);
  // The shared monotonic clock without an allocation per call: performance.now() in this thread
  // plus its constant offset to CLOCK_MONOTONIC (monoMs allocates a BigInt every call).
  const offset = monoMs() - performance.now();
  const now = (): number => performance.now() + offset;
  const module = input.module;
  // Warm-up on a scratch instance of the same module: V8 tiers up the shared code, so the real
  // bank's first ticks are not run by the baseline compiler.
  const scratch = new WasmHotPath(module);
  loadBank(scratch, warmupSpec(input.spec.loops.length, input.spec.points.length));
  for (let k = 1; k <= input.warmupTicks; k++) {
    warmupSamples(scratch, input.spec.points.length, k);
    scratch.step(k, 0.001);
  }
  const hp = new WasmHotPath(module);
  loadBank(hp, input.spec);
  const v = hp.views;

  try {
    // timer slack is per thread: 1 ns for this one, so Atomics.wait wakes on time
    writeFileSync("/proc/thread-self/timerslack_ns", "1");
  } catch {
    // not on Linux, or not permitted: keep the default slack
  }
  Atomics.store(f.ctrl, CTRL.SCHED, input.schedFifo ? (raisePriority(input.schedPriority) ? 1 : -1) : 0);

  const P = input.sizes.points;
  const Lc = input.sizes.loops;
  const R = input.sizes.racks;
  const hist = new LogHistogram(f.lateness);
  const periodMs = input.periodMs;
  const lastReset = new Int32Array(R);
  const lastRestore = new Int32Array(R);
  // the racks whose reset or restore count moved in this tick's command frame
  const resetEdge = new Int32Array(R);
  const restoreEdge = new Int32Array(R);
  const lastTuneStart = new Int32Array(Lc);
  const lastTuneStop = new Int32Array(Lc);
  // the loops whose tune start or stop count moved (TUNE_EDGE_*)
  const tuneEdge = new Int32Array(Lc);
  const ring = input.recorder === undefined ? null : new FlightRingWriter(input.recorder.shape, input.recorder.buffers);
  const interlocks = new InterlockChangeDetector(Lc, R);
  // which loops were in live control (a status word, no fail-safe) at the last tick: a loop that
  // leaves live control for fail-safe is counted, every time, so a fail-safe shorter than a
  // supervisor pass (which samples the outputs) is not missed; the start, before a loop's inputs
  // first arrive, is not an entry
  const live = new Uint8Array(Lc);
  // the command frame as this worker last copied it whole: applied, and recorded, from here
  const cmd = new CommandCopy(input.sizes);
  let cmdSeq = -1;
  let patchGen = Atomics.load(f.ctrl, CTRL.PATCH_GEN);
  const t0 = now();
  let k = 0;
  let last = t0;

  const commandFrame = (tickMs: number): void => {
    for (let r = 0; r < R; r++) {
      const resets = cmd.rackResetCount[r];
      resetEdge[r] = resets !== lastReset[r] ? 1 : 0;
      lastReset[r] = resets;
      const restores = cmd.rackRestoreCount[r];
      restoreEdge[r] = restores !== lastRestore[r] ? 1 : 0;
      lastRestore[r] = restores;
    }
    for (let i = 0; i < Lc; i++) {
      const starts = cmd.loopTuneStarts[i];
      const stops = cmd.loopTuneStops[i];
      tuneEdge[i] = stops !== lastTuneStop[i] ? TUNE_EDGE_STOP : starts !== lastTuneStart[i] ? TUNE_EDGE_START : TUNE_EDGE_NONE;
      lastTuneStart[i] = starts;
      lastTuneStop[i] = stops;
    }
    applyCommands(v, cmd, Lc, R, resetEdge, restoreEdge, tuneEdge, tickMs);
  };

  const patch = (): void => {
    const len = Atomics.load(f.ctrl, CTRL.PATCH_LEN);
    applyPatch(v, JSON.parse(Buffer.from(f.patch.subarray(0, len)).toString("utf8")) as BankSpec);
    Atomics.store(f.ctrl, CTRL.PATCH_APPLIED, patchGen);
  };

  let wakes = Atomics.load(f.ctrl, CTRL.WAKE);
  let urgentThisPeriod = false;
  while (Atomics.load(f.ctrl, CTRL.STOP) === 0) {
    const deadline = t0 + k * periodMs;
    const wait = deadline - now();
    if (wait > 0) Atomics.wait(f.ctrl, CTRL.WAKE, wakes, wait);
    if (Atomics.load(f.ctrl, CTRL.STOP) !== 0) break;
    const tick = now();
    // Woken before the deadline by tickNow(): a safety input changed, so this tick runs now, off
    // the cadence; the regular tick still comes at the deadline (k is not advanced). At most one
    // per period: a chattering leak sensor cannot multiply the tick rate.
    const woken = Atomics.load(f.ctrl, CTRL.WAKE);
    const urgent = woken !== wakes && tick < deadline;
    wakes = woken;
    if (urgent && urgentThisPeriod) continue;
    urgentThisPeriod = urgent;
    if (urgent) {
      Atomics.add(f.ctrl, CTRL.URGENT_TICKS, 1);
    } else {
      const lateMs = tick - deadline;
      hist.record(lateMs * 1000);
      if (lateMs * 1000 > f.ctrlF[CTRL_F64.MAX_LATE_US]) f.ctrlF[CTRL_F64.MAX_LATE_US] = lateMs * 1000;
      if (lateMs > periodMs) Atomics.add(f.ctrl, CTRL.OVERRUNS, 1);
      // After a long stall, skip the missed periods instead of running them back to back.
      if (lateMs > 10 * periodMs) {
        const behind = Math.floor(lateMs / periodMs);
        Atomics.add(f.ctrl, CTRL.SKIPPED, behind);
        k += behind;
      }
    }

    ring?.begin(v);
    for (let i = 0; i < P; i++) {
      const s1 = Atomics.load(f.pointSeq, i);
      const value = f.pointValue[i];
      const ts = f.pointTs[i];
      // being written: keep last tick's sample
      if (!(s1 & 1) && Atomics.load(f.pointSeq, i) === s1) writeSample(v, i, value, ts);
      else ring?.skipped(i);
    }
    let flags = urgent ? FLAG_URGENT : 0;
    const seq = Atomics.load(f.ctrl, CTRL.CMD_SEQ);
    if (seq !== cmdSeq && f.copyCommands(seq, cmd)) {
      cmdSeq = seq;
      commandFrame(tick);
      flags |= FLAG_COMMANDS;
    }
    const gen = Atomics.load(f.ctrl, CTRL.PATCH_GEN);
    if (gen !== patchGen) {
      patchGen = gen;
      patch();
      flags |= FLAG_PATCH;
    }

    // dt is the time actually elapsed, bounded so a stall does not become one huge integration
    // step (an urgent tick and the regular one after it share a period between them)
    const dtS = Math.min(Math.max(tick - last, MIN_DT_MS), periodMs * 5) / 1000;
    last = tick;
    ring?.pre(v, cmd, flags, resetEdge, restoreEdge, tuneEdge, tick, dtS);
    const rc = hp.step(tick, dtS);
    f.ctrlF[CTRL_F64.STEP_NS_LAST] = (now() - tick) * 1e6;
    if (rc !== L.STEP_OK) {
      Atomics.store(f.ctrl, CTRL.ERROR, rc);
      break;
    }
    ring?.post(v);

    Atomics.add(f.ctrl, CTRL.OUT_SEQ, 1);
    for (let i = 0; i < Lc; i++) {
      f.loopOut[i] = v.loopF.out[i];
      f.loopPv[i] = v.loopF.pv[i];
      const st = v.loopI.status[i];
      f.loopStatus[i] = st;
      const fs = inFailsafe(st);
      if (fs && live[i] === 1) Atomics.add(f.ctrl, CTRL.FAILSAFE_ENTRIES, 1);
      live[i] = fs ? 0 : st !== 0 ? 1 : live[i];
      f.loopTune[i] = v.loopI.tune[i];
      f.loopTuneEnd[i] = v.loopI.tuneEnd[i];
      f.loopTuneSwitches[i] = v.loopI.tuneSwitches[i];
      f.loopTuneApplied[i] = lastTuneStart[i];
      f.loopTuneCenter[i] = v.loopF.tuneCenter[i];
      f.loopTuneHyst[i] = v.loopF.tuneHyst[i];
      f.loopTuneD[i] = v.loopF.tuneD[i];
    }
    for (let r = 0; r < R; r++) {
      f.rackState[r] = v.rackI.state[r];
      f.rackStatus[r] = v.rackI.status[r];
      f.rackSupplyOpen[r] = v.rackI.supplyOpen[r];
      f.rackReturnOpen[r] = v.rackI.returnOpen[r];
      f.rackResetResult[r] = v.rackI.resetResult[r];
    }
    for (let i = 0; i < P; i++) f.pointQuality[i] = v.pointI.quality[i];
    f.ctrlF[CTRL_F64.LAST_TICK_MS] = tick;
    Atomics.add(f.ctrl, CTRL.OUT_SEQ, 1);
    Atomics.add(f.ctrl, CTRL.TICKS, 1);
    if (Atomics.load(f.ctrl, CTRL.READY) === 0) {
      Atomics.store(f.ctrl, CTRL.READY, 1);
      Atomics.notify(f.ctrl, CTRL.READY);
    }
    if (interlocks.changed(v)) {
      // an isolation valve must move now, not at the main thread's next actuator pass
      Atomics.add(f.ctrl, CTRL.OUT_CHANGED, 1);
      Atomics.notify(f.ctrl, CTRL.OUT_CHANGED);
    }
    if (!urgent) k++;
  }
}

try {
  run(workerData as WorkerInput);
} catch (err) {
  post("error", (err as Error).stack ?? String(err));
  process.exitCode = 1;
}
