// Writes typed loop, point and rack specs into a hot-path bank.
//
// This is the only place that knows how a spec maps onto bank fields; config loading, tests
// and benchmarks all go through it. It runs when config loads or reloads, never per tick.
import * as L from "./assembly/layout.js";
import type { HotPath, BankViews } from "./views.js";

export type SafeAction = "open" | "closed" | "hold" | { fixed: number };
export type LoopMode = "Automatic" | "Manual" | "Override" | "Disabled";

export interface PointSpec {
  kind?: "analog" | "leak";
  /** leak points: the rack index they guard */
  rack?: number;
  min: number;
  max: number;
  /** units per second; 0 disables */
  rateMax?: number;
  /** ms; 0 disables */
  staleMs?: number;
  stuckEps?: number;
  /** ms; 0 disables */
  stuckMs?: number;
  /** the loop whose output is the plant around this point: with stuckMove above 0, an unchanged point is stuck only once that output moved by stuckMove and the point still did not answer for stuckMs */
  stuckLoop?: number;
  /** output units; 0 or absent: time alone judges */
  stuckMove?: number;
  debounceFault?: number;
  debounceClear?: number;
}

export interface LoopSpec {
  pvPoint: number;
  ffPoint?: number;
  rack?: number;
  action: "direct" | "reverse";
  kp: number;
  ki: number;
  kd?: number;
  /** derivative filter time constant, s */
  tf?: number;
  /** first-order PV filter time constant, s; 0 = none */
  pvFilterS?: number;
  kff?: number;
  ffBias?: number;
  outMin: number;
  outMax: number;
  /** output units per s; 0 = unlimited */
  outRate?: number;
  /** PV units per s; 0 = step */
  spRamp?: number;
  deadband?: number;
  safeOnLeak: SafeAction;
  safeOnSensorFault: SafeAction;
  sp: number;
  mode?: LoopMode;
  /** relay autotune bounds; absent: the loop cannot be tuned */
  tune?: TuneSpec;
  /** minimum-flow floor through the loop's rack, in its flow point's units (0 or absent: none) */
  minFlowLpm?: number;
  /** how fast the floor moves the output, output units per (flow unit * s) */
  minFlowGain?: number;
}

/** A loop's relay autotune bounds (the hot path's LF_TUNE_* config fields). */
export interface TuneSpec {
  /** the relay's amplitude around the operating output, output units */
  amplitude: number;
  /** the least hysteresis, PV units (the noise may ask for more) */
  hysteresisMin: number;
  /** the PV's largest deviation from the operating point before the tuning aborts, PV units */
  deviationMax: number;
  /** how long the noise is measured, output held, before the relay starts, s */
  noiseS: number;
  /** how long a whole tuning may take before it aborts, s */
  timeoutS: number;
}

export interface RackSpec {
  flowPoint?: number;
  /** the isolation valves' closed limit switches (1 at the limit): where given, the proof needs them closed too */
  supplyClosedPoint?: number;
  returnClosedPoint?: number;
  isolatedFlowMaxLpm: number;
  isolationDeadlineMs: number;
  leakSensorFault?: "hold" | "isolate";
}

export interface BankSpec {
  points: readonly PointSpec[];
  loops: readonly LoopSpec[];
  racks: readonly RackSpec[];
}

export const MODE_CODE: Readonly<Record<LoopMode, number>> = {
  Automatic: L.MODE_AUTOMATIC,
  Manual: L.MODE_MANUAL,
  Override: L.MODE_OVERRIDE,
  Disabled: L.MODE_DISABLED,
};

function safeCode(a: SafeAction): { code: number; fixed: number } {
  if (a === "open") return { code: L.SAFE_OPEN, fixed: 0 };
  if (a === "closed") return { code: L.SAFE_CLOSED, fixed: 0 };
  if (a === "hold") return { code: L.SAFE_HOLD, fixed: 0 };
  return { code: L.SAFE_FIXED, fixed: a.fixed };
}

export function writePoint(v: BankViews, i: number, s: PointSpec): void {
  v.pointI.kind[i] = s.kind === "leak" ? L.KIND_LEAK : L.KIND_ANALOG;
  v.pointI.rack[i] = s.rack ?? -1;
  v.pointF.min[i] = s.min;
  v.pointF.max[i] = s.max;
  v.pointF.rateMax[i] = s.rateMax ?? 0;
  v.pointF.staleMs[i] = s.staleMs ?? 0;
  v.pointF.stuckEps[i] = s.stuckEps ?? 0;
  v.pointF.stuckMs[i] = s.stuckMs ?? 0;
  // the hot path reads that loop's output by index: one outside the bank would be read from
  // whatever lies there
  const stuckLoop = s.stuckLoop ?? -1;
  if (!Number.isInteger(stuckLoop) || stuckLoop < -1 || stuckLoop >= L.MAX_LOOPS) throw new Error(`point ${i}: stuckLoop ${stuckLoop} is not a loop of the bank (0..${L.MAX_LOOPS - 1}, or -1 for none)`);
  v.pointI.stuckLoop[i] = stuckLoop;
  v.pointF.stuckMove[i] = s.stuckMove ?? 0;
  v.pointI.debounceFault[i] = Math.max(1, s.debounceFault ?? 1);
  v.pointI.debounceClear[i] = Math.max(1, s.debounceClear ?? 1);
  v.pointF.quietUntil[i] = -Infinity; // new limits: evaluate the point in full next tick
  markPoint(v, i);
}

/**
 * Tells the step that point i's sample or config changed. The step validates only marked
 * points between its periodic full scans, so every write to a point goes with this.
 */
export function markPoint(v: BankViews, i: number): void {
  v.pointDirty[i >>> 5] |= 1 << (i & 31);
}

export function writeLoop(v: BankViews, i: number, s: LoopSpec): void {
  const { loopF: f, loopI: n } = v;
  n.pvPoint[i] = s.pvPoint;
  n.ffPoint[i] = s.ffPoint ?? -1;
  n.rack[i] = s.rack ?? -1;
  n.action[i] = s.action === "reverse" ? L.ACTION_REVERSE : L.ACTION_DIRECT;
  f.kp[i] = s.kp;
  f.ki[i] = s.ki;
  f.kd[i] = s.kd ?? 0;
  f.tf[i] = s.tf ?? 0;
  const pvFilterS = s.pvFilterS ?? 0;
  // a new time constant restarts the filter from the next good sample: a state kept from when
  // the filter was last on would be a bump
  if (f.pvFilterS[i] !== pvFilterS) f.pvFilt[i] = NaN;
  f.pvFilterS[i] = pvFilterS;
  f.kff[i] = s.kff ?? 0;
  f.ffBias[i] = s.ffBias ?? 0;
  f.outMin[i] = s.outMin;
  f.outMax[i] = s.outMax;
  f.outRate[i] = s.outRate ?? 0;
  f.spRamp[i] = s.spRamp ?? 0;
  f.deadband[i] = s.deadband ?? 0;
  const leak = safeCode(s.safeOnLeak);
  const sensor = safeCode(s.safeOnSensorFault);
  n.safeLeak[i] = leak.code;
  f.safeFixedLeak[i] = leak.fixed;
  n.safeSensor[i] = sensor.code;
  f.safeFixedSensor[i] = sensor.fixed;
  f.sp[i] = s.sp;
  n.mode[i] = MODE_CODE[s.mode ?? "Automatic"];
  f.tuneAmp[i] = s.tune?.amplitude ?? 0;
  f.tuneHystMin[i] = s.tune?.hysteresisMin ?? 0;
  f.tuneDevMax[i] = s.tune?.deviationMax ?? 0;
  f.tuneNoiseMs[i] = (s.tune?.noiseS ?? 0) * 1000;
  f.tuneTimeoutMs[i] = (s.tune?.timeoutS ?? 0) * 1000;
  f.minFlow[i] = s.minFlowLpm ?? 0;
  f.flowGain[i] = s.minFlowGain ?? 0;
}

/**
 * Starts loop i's relay autotune at tick time `nowMs`: the noise window first, around the output
 * the loop has now. The step does the rest, and ends it on its own checks. The loop's branch is
 * cleared so the step takes the loop through its scalar path at once (the two-lane path only
 * takes loops in steady automatic control).
 */
export function startTune(v: BankViews, i: number, nowMs: number): void {
  const { loopF: f, loopI: n } = v;
  f.tuneT0[i] = nowMs;
  f.tuneBias[i] = f.out[i];
  f.tuneLo[i] = Infinity;
  f.tuneHi[i] = -Infinity;
  f.tuneSum[i] = 0;
  f.tuneN[i] = 0;
  f.tuneCenter[i] = NaN;
  f.tuneHyst[i] = NaN;
  f.tuneD[i] = NaN;
  n.tuneRelay[i] = 0;
  n.tuneSwitches[i] = 0;
  n.tuneEnd[i] = L.TUNE_END_NONE;
  n.tune[i] = L.TUNE_NOISE;
  n.branch[i] = L.BRANCH_NONE;
}

/** Stops loop i's tuning, if one runs: the loop returns to its mode at the next tick, bumplessly. */
export function stopTune(v: BankViews, i: number): void {
  if (v.loopI.tune[i] === L.TUNE_OFF) return;
  v.loopI.tune[i] = L.TUNE_OFF;
  v.loopI.tuneEnd[i] = L.TUNE_END_STOPPED;
}

export function writeRack(v: BankViews, r: number, s: RackSpec): void {
  v.rackI.flowPoint[r] = s.flowPoint ?? -1;
  v.rackI.supplyClosedPoint[r] = s.supplyClosedPoint ?? -1;
  v.rackI.returnClosedPoint[r] = s.returnClosedPoint ?? -1;
  v.rackF.isolatedFlowMax[r] = s.isolatedFlowMaxLpm;
  v.rackF.isolationDeadlineMs[r] = s.isolationDeadlineMs;
  v.rackI.sensorFaultAction[r] = s.leakSensorFault === "isolate" ? L.LEAK_FAULT_ISOLATE : L.LEAK_FAULT_HOLD;
  v.rackI.manualIsolate[r] = 0;
}

/** Writes a whole bank spec, sets the counts and clears run-time state. Throws if it does not fit. */
export function loadBank(hp: HotPath, spec: BankSpec): void {
  const rc = hp.configure(spec.loops.length, spec.points.length, spec.racks.length);
  if (rc !== L.STEP_OK) {
    throw new Error(
      `bank does not fit: ${spec.loops.length}/${L.MAX_LOOPS} loops, ` +
        `${spec.points.length}/${L.MAX_POINTS} points, ${spec.racks.length}/${L.MAX_RACKS} racks`,
    );
  }
  spec.points.forEach((s, i) => writePoint(hp.views, i, s));
  spec.loops.forEach((s, i) => writeLoop(hp.views, i, s));
  spec.racks.forEach((s, r) => writeRack(hp.views, r, s));
  hp.resetState();
}

/** Hands one sample to the bank: the value and its source time on the monotonic clock (ms). */
export function writeSample(v: BankViews, point: number, value: number, sourceTimeMs: number): void {
  v.pointF.value[point] = value;
  v.pointF.ts[point] = sourceTimeMs;
  markPoint(v, point);
}
