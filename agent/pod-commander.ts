// What the command executor commands: the pod's own operations (its snapshot, the alarms'
// acknowledgement, the audit trail, the envelope) and each feature's handlers, put together as
// one PodCommander. A feature's commands are its own methods; this file only routes to them.
import { forceTarget } from "./commissioning/force-target.js";
import type { PodConfig } from "../pod/config.js";
import type { CommandLimits, PodCommander } from "./pod-api.js";
import type { OperatorDecisions } from "./operator/operator-decisions.js";
import type { RecorderFeature } from "./recorder/recorder-feature.js";
import type { StrokeFeature } from "./health/stroke-feature.js";
import type { TuningFeature } from "./tuning/tuning-feature.js";

export interface CommanderParts {
  core: Pick<PodCommander, "layout" | "snapshot" | "acknowledgeAlarm" | "audit"> & { readonly limits: CommandLimits; readonly config: Pick<PodConfig, "racks" | "cdu"> };
  operator: OperatorDecisions;
  tuning: TuningFeature;
  strokes: StrokeFeature;
  recorder: RecorderFeature;
}

export function podCommander({ core, operator: op, tuning: t, strokes: s, recorder: r }: CommanderParts): PodCommander {
  return {
    get layout() {
      return core.layout;
    },
    get limits() {
      return core.limits;
    },
    snapshot: () => core.snapshot(),
    acknowledgeAlarm: (id, by) => core.acknowledgeAlarm(id, by),
    audit: (a) => core.audit(a),
    setSetpoint: (loop, value, leaseMs, by) => op.setSetpoint(loop, value, leaseMs, by),
    setLoopMode: (loop, mode, value) => op.setLoopMode(loop, mode, value),
    overrideLoop: (loop, pct, leaseMs, by) => op.overrideLoop(loop, pct, leaseMs, by),
    setMaintenance: (on) => op.setMaintenance(on),
    maintenance: () => op.maintenance(),
    endOverride: (loop) => op.endOverride(loop),
    forceTarget: (output) => forceTarget(core.config, core.layout, output),
    isolateRack: (rack, isolate) => op.isolateRack(rack, isolate),
    rackLoad: (rack) => op.rackLoad(rack),
    leakLatched: (rack) => op.leakLatched(rack),
    resetLeak: (rack) => op.resetLeak(rack),
    setPowerBudget: (kw) => op.setPowerBudget(kw),
    recordNow: (by) => r.recordNow(by),
    recentRecordings: (n) => r.recentRecordings(n),
    startTuning: (loop, by) => t.startTuning(loop, by),
    abortTuning: (loop, by) => t.abortTuning(loop, by),
    tuningStatus: (loop) => t.tuningStatus(loop),
    applyGains: (loop, gains, by) => t.applyGains(loop, gains, by),
    revertGains: (loop, by) => t.revertGains(loop, by),
    loopGains: (loop) => t.loopGains(loop),
    startStroke: (rack, valve, by) => s.startStroke(rack, valve, by),
    abortStroke: (by) => s.abortStroke(by),
    strokeStatus: () => s.strokeStatus(),
  };
}
