// How a tick's commands and a tuning patch enter the bank. The control worker applies them so,
// and the flight recorder's replay applies the recorded ones with the same code: a replay that
// applied a command differently would not reproduce the tick it claims to.
import * as L from "../../hotpath-as/assembly/layout.js";
import { startTune, stopTune, writeLoop, writePoint, writeRack, type BankSpec } from "../../hotpath-as/bank-config.js";
import type { BankViews } from "../../hotpath-as/views.js";

/** The command frame's values, as the main thread last committed them. */
export interface CommandValues {
  loopSp: ArrayLike<number>;
  loopMode: ArrayLike<number>;
  loopManual: ArrayLike<number>;
  loopOverride: ArrayLike<number>;
  rackManualIsolate: ArrayLike<number>;
}

/** A loop's relay autotune request in a command frame (tuneEdge). */
export const TUNE_EDGE_NONE = 0;
export const TUNE_EDGE_START = 1;
export const TUNE_EDGE_STOP = 2;

/**
 * Applies a committed command frame. `resetEdge[r]` / `restoreEdge[r]` are 1 where the rack's
 * reset or latch-restore count moved since the last frame; `tuneEdge[i]` is TUNE_EDGE_* where
 * the loop's tune start or stop count moved (a stop wins over a start in the same frame).
 */
export function applyCommands(v: BankViews, c: CommandValues, loops: number, racks: number, resetEdge: ArrayLike<number>, restoreEdge: ArrayLike<number>, tuneEdge: ArrayLike<number>, tickMs: number): void {
  for (let i = 0; i < loops; i++) {
    v.loopF.sp[i] = c.loopSp[i];
    v.loopI.mode[i] = c.loopMode[i];
    if (c.loopMode[i] === L.MODE_MANUAL) v.loopF.manual[i] = c.loopManual[i];
    if (c.loopMode[i] === L.MODE_OVERRIDE) v.loopF.override[i] = c.loopOverride[i];
    if (tuneEdge[i] === TUNE_EDGE_START) startTune(v, i, tickMs);
    else if (tuneEdge[i] === TUNE_EDGE_STOP) stopTune(v, i);
  }
  for (let r = 0; r < racks; r++) {
    v.rackI.manualIsolate[r] = c.rackManualIsolate[r];
    if (resetEdge[r] !== 0) v.rackI.reset[r] = 1;
    // a leak latch restored after a restart: isolate again and prove it again
    if (restoreEdge[r] !== 0 && v.rackI.state[r] === L.RACK_NORMAL) {
      v.rackI.state[r] = L.RACK_ISOLATING;
      v.rackF.isolatedSince[r] = tickMs;
    }
  }
}

/**
 * A tuning patch (a SIGHUP reload, or gains an engineer applied): config fields only; run-time
 * state, setpoints, modes and isolations carry on. A loop in automatic control takes new P and D
 * gains bumplessly: its integral takes up the change in the P and D terms at the last tick's
 * error and PV slope, so the output does not jump when kp changes under a standing error.
 */
export function applyPatch(v: BankViews, spec: BankSpec): void {
  spec.points.forEach((s, i) => writePoint(v, i, s));
  spec.loops.forEach((s, i) => {
    const sp = v.loopF.sp[i];
    const mode = v.loopI.mode[i];
    const kp = v.loopF.kp[i];
    const kd = v.loopF.kd[i];
    writeLoop(v, i, s);
    v.loopF.sp[i] = sp;
    v.loopI.mode[i] = mode;
    if (v.loopI.branch[i] === L.BRANCH_AUTOMATIC) {
      const act = v.loopI.action[i] === L.ACTION_REVERSE ? -1 : 1;
      const shift = (kp - v.loopF.kp[i]) * v.loopF.error[i] + (kd - v.loopF.kd[i]) * act * v.loopF.dFilt[i];
      if (Number.isFinite(shift)) v.loopF.integral[i] += shift;
    }
  });
  spec.racks.forEach((s, r) => {
    const iso = v.rackI.manualIsolate[r];
    writeRack(v, r, s);
    v.rackI.manualIsolate[r] = iso;
  });
}
