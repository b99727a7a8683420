// The operator's decisions from before a restart or a reload, put back before the first tick.
// One that no longer fits the config (a rack or loop gone, a value outside the envelope, a lease
// run out) is dropped and said: an alarm for what was lost, never a silent change.
import { isForce } from "./loop-leases.js";
import type { LoopMode } from "../../hotpath-as/bank-config.js";
import type { LoopKind, PodLayout } from "../../pod/layout.js";
import { loopEnvelope, type CommandLimits, type ProblemReport, type Range } from "../pod-api.js";
import type { Logger } from "../pod-context.js";
import { describeOperatorState, type OperatorState } from "./operator-state.js";

export interface RestoreHost {
  layout: PodLayout;
  limits: CommandLimits;
  control: {
    setManualIsolate(rack: number, isolate: boolean): void;
    setMode(loop: number, mode: LoopMode, value?: number): void;
    setSetpoint(loop: number, sp: number): void;
  };
  log: Logger;
  setMaintenance(on: boolean): void;
  reportProblem(id: string, p: ProblemReport): void;
  /** a setpoint put back on its lease (the control worker is told apart) */
  lease(loop: number, value: number, leftMs: number, by: string): void;
  /** an Override put back on its lease (the control worker is told apart) */
  override(loop: number, outputPct: number, leftMs: number, by: string): void;
}

/** Applies what still fits of `s` to the control worker and returns it: the state now in force. */
export function restoreOperatorState(s: OperatorState, h: RestoreHost): OperatorState {
  const { layout: lay, limits: lim, control } = h;
  const dropped: string[] = [];
  const kept: OperatorState = { isolatedRacks: [], loopModes: [], maintenance: s.maintenance, setpoints: [], overrides: [] };
  for (const name of s.isolatedRacks) {
    const r = lay.rackIndex(name);
    if (r === undefined) dropped.push(`isolation of ${name}: no such rack now`);
    else {
      control.setManualIsolate(r, true);
      kept.isolatedRacks.push(name);
    }
  }
  for (const m of s.loopModes) {
    const loop = lay.loopIndex(m.loop);
    const env = loopEnvelope(lim, loop === undefined ? "rack" : lay.loopKind(loop)).output;
    if (loop === undefined) dropped.push(`${m.mode} on ${m.loop}: no such loop now`);
    else if (m.mode === "Override") dropped.push(`Override on ${m.loop}: an Override holds only for a lease, and this one has none`);
    else if (m.outputPct !== undefined && (m.outputPct < env.min || m.outputPct > env.max)) dropped.push(`${m.mode} on ${m.loop}: ${m.outputPct} % is outside [${env.min}, ${env.max}] now`);
    else {
      control.setMode(loop, m.mode, m.outputPct);
      kept.loopModes.push(m);
    }
  }
  kept.setpoints = restoreLeased(h, s.setpoints, (kind) => loopEnvelope(lim, kind).setpoint, (p) => p.value, dropped, {
    noLoop: (p) => `setpoint on ${p.loop}: no such loop now`,
    outside: (p, env) => `setpoint ${p.value} on ${p.loop}: outside [${env.min}, ${env.max}] now`,
    apply: (loop, p, leftMs) => {
      h.lease(loop, p.value, leftMs, p.by);
      control.setSetpoint(loop, p.value);
    },
  });
  // a loop check's force outside maintenance (saved by a version that kept it past maintenance's end)
  const checks = s.overrides.filter((o) => s.maintenance || !isForce(o.by));
  for (const o of s.overrides) if (!checks.includes(o)) dropped.push(`Override on ${o.loop} by ${o.by}: a loop check's force, and the pod is not in maintenance`);
  kept.overrides = restoreLeased(h, checks, (kind) => loopEnvelope(lim, kind).output, (o) => o.outputPct, dropped, {
    noLoop: (o) => `Override on ${o.loop}: no such loop now`,
    outside: (o, env) => `Override on ${o.loop}: ${o.outputPct} % is outside [${env.min}, ${env.max}] now`,
    apply: (loop, o, leftMs) => {
      h.override(loop, o.outputPct, leftMs, o.by);
      control.setMode(loop, "Override", o.outputPct);
    },
  });
  h.setMaintenance(kept.maintenance);
  for (const line of describeOperatorState(kept)) h.log.warn({ decision: line }, "operator decision restored from before the restart");
  if (dropped.length > 0) {
    h.reportProblem("state:operator-dropped", { severity: "Warning", source: "agent", message: `operator decisions that no longer fit the config were dropped: ${dropped.join("; ")}`, untilAcknowledged: true });
  }
  return kept;
}

/**
 * Restores leased values (setpoints, Overrides): each for a loop that still exists, inside the
 * envelope it has now, with lease time left by the wall clock, and never more than the longest
 * lease (a clock stepped back must not stretch one). Returns those kept; says what was dropped.
 */
function restoreLeased<T extends { loop: string; expiresAtMs: number }>(
  h: RestoreHost,
  items: readonly T[],
  rangeOf: (kind: LoopKind) => Range,
  valueOf: (x: T) => number,
  dropped: string[],
  on: { noLoop: (x: T) => string; outside: (x: T, env: Range) => string; apply: (loop: number, x: T, leftMs: number) => void },
): T[] {
  const lay = h.layout;
  const nowWall = Date.now();
  const kept: T[] = [];
  for (const x of items) {
    const loop = lay.loopIndex(x.loop);
    if (loop === undefined) {
      dropped.push(on.noLoop(x));
      continue;
    }
    const env = rangeOf(lay.loopKind(loop));
    const leftMs = Math.min(x.expiresAtMs - nowWall, h.limits.maxLeaseS * 1000);
    if (valueOf(x) < env.min || valueOf(x) > env.max) dropped.push(on.outside(x, env));
    else if (leftMs > 0) {
      on.apply(loop, x, leftMs);
      kept.push(x);
    }
  }
  return kept;
}
