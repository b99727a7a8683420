// How a tick's commands and a tuning patch enter the bank. The control worker applies them so,
// and the flight recorder's replay applies the recorded ones with the same code: a replay that
// applied a command differently would not reproduce the tick it claims to.
import * as L from "../../hotpath-as/assembly/layout.js";
import { writeLoop, writePoint, writeRack, type BankSpec } from "../../hotpath-as/bank-config.js";
import type { BankViews } from "../../hotpath-as/views.js";

/** The command frame's values, as the main thread last committed them. */
export interface CommandValues {
  loopSp: ArrayLike<number>;
  loopMode: ArrayLike<number>;
  loopManual: ArrayLike<number>;
  loopOverride: ArrayLike<number>;
  rackManualIsolate: ArrayLike<number>;
}

/**
 * Applies a committed command frame. `resetEdge[r]` / `restoreEdge[r]` are 1 where the rack's
 * reset or latch-restore count moved since the last frame.
 */
export function applyCommands(v: BankViews, c: CommandValues, loops: number, racks: number, resetEdge: ArrayLike<number>, restoreEdge: ArrayLike<number>, tickMs: number): void {
  for (let i = 0; i < loops; i++) {
    v.loopF.sp[i] = c.loopSp[i];
    v.loopI.mode[i] = c.loopMode[i];
    if (c.loopMode[i] === L.MODE_MANUAL) v.loopF.manual[i] = c.loopManual[i];
    if (c.loopMode[i] === L.MODE_OVERRIDE) v.loopF.override[i] = c.loopOverride[i];
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

/** A tuning patch (SIGHUP reload): config fields only; run-time state, setpoints, modes and isolations carry on. */
export function applyPatch(v: BankViews, spec: BankSpec): void {
  spec.points.forEach((s, i) => writePoint(v, i, s));
  spec.loops.forEach((s, i) => {
    const sp = v.loopF.sp[i];
    const mode = v.loopI.mode[i];
    writeLoop(v, i, s);
    v.loopF.sp[i] = sp;
    v.loopI.mode[i] = mode;
  });
  spec.racks.forEach((s, r) => {
    const iso = v.rackI.manualIsolate[r];
    writeRack(v, r, s);
    v.rackI.manualIsolate[r] = iso;
  });
}
