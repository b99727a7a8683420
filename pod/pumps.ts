// The CDU's pumps as one list, whichever way the config gives them: one pump on cdu.outputs, or
// redundant pumps in lead/lag duty on cdu.pumps. The wiring, the fail-safe matrix, the status
// view and the supervisor's duty all read this list, never the two config shapes.
import type { CduConfig } from "./config.js";

export interface PumpSpec {
  name: string;
  /** output ids */
  speed: string;
  enable?: string;
  failSpeed?: string;
  /** status point ids: 1 on a trip or fault; 1 while it turns */
  fault?: string;
  running?: string;
  /** its speed feedback point id, where one is configured (shown only) */
  speedFeedback?: string;
}

type PumpSource = Pick<CduConfig, "outputs" | "pumps"> & { points?: Pick<CduConfig["points"], "pumpSpeedPct"> };

/** The name of the one pump of a CDU configured on cdu.outputs. */
export const SINGLE_PUMP = "pump";

/** The CDU's pumps, in config order (the lead/lag order). */
export function cduPumps(cdu: PumpSource): PumpSpec[] {
  if (cdu.pumps !== undefined) {
    return cdu.pumps.map((p) => ({ name: p.name, speed: p.outputs.speed, enable: p.outputs.enable, failSpeed: p.outputs.failSpeed, fault: p.points.fault, running: p.points.running, speedFeedback: p.points.speedPct }));
  }
  const o = cdu.outputs;
  return o.pumpSpeed === undefined ? [] : [{ name: SINGLE_PUMP, speed: o.pumpSpeed, enable: o.pumpEnable, failSpeed: o.failPumpSpeed, speedFeedback: cdu.points?.pumpSpeedPct }];
}

/** Every pump has a run enable: what an escalation's pump stop needs. */
export function pumpsStoppable(cdu: PumpSource): boolean {
  const pumps = cduPumps(cdu);
  return pumps.length > 0 && pumps.every((p) => p.enable !== undefined);
}

/** Problems a schema cannot state about the pumps, as "key.path: reason". */
export function pumpProblems(cdu: PumpSource): string[] {
  const out: string[] = [];
  const o = cdu.outputs;
  const single = [o.pumpSpeed, o.pumpEnable, o.failPumpSpeed].some((x) => x !== undefined);
  if (cdu.pumps !== undefined && single) out.push("cdu.outputs: give the pump outputs here or in cdu.pumps, not both");
  else if (cdu.pumps === undefined && o.pumpSpeed === undefined) out.push("cdu.outputs.pumpSpeed: required (or list redundant pumps in cdu.pumps)");
  const seen = new Map<string, string>();
  (cdu.pumps ?? []).forEach((p, i) => {
    if (cdu.pumps?.findIndex((q) => q.name === p.name) !== i) out.push(`cdu.pumps[${i}].name: "${p.name}" is used twice`);
    for (const [key, id] of Object.entries({ ...p.outputs, ...p.points })) {
      if (id === undefined) continue;
      const other = seen.get(id);
      if (other !== undefined) out.push(`cdu.pumps[${i}]: ${id} is also ${other} (each pump needs its own)`);
      else seen.set(id, `cdu.pumps[${i}] ${key}`);
    }
  });
  return out;
}

/** Warnings about the pumps: a pump in duty whose failure cannot be seen. */
export function pumpWarnings(cdu: PumpSource): string[] {
  return (cdu.pumps ?? []).flatMap((p, i) =>
    p.points.fault === undefined && p.points.running === undefined
      ? [`cdu.pumps[${i}] (${p.name}): neither a fault nor a running point, so its failure cannot be seen and it never fails over; give its drive's trip bit or its proof of running`]
      : [],
  );
}
