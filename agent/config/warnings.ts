// What a config lets through but an engineer should hear about: settings that are valid, whose
// effect on a real plant the schema cannot judge. check-config prints them, and the daemon logs
// them at its start; neither refuses the config.
import type { AgentConfig } from "./load.js";
import { pumpWarnings } from "../../pod/pumps.js";

export function configWarnings(c: AgentConfig): string[] {
  const out: string[] = [];
  const p = c.control.points;
  // stuck detection (issue 53, item 5): a point with a loop of its own is judged by the plant
  // around it; one without is judged by time alone, which a steady, noiseless plant trips
  const timeAlone: [string, number, number, string][] = [
    ["temperature", p.temperature.stuckMs, p.temperature.stuckMove, "the racks' and the CDU's supply temperatures have no loop of their own"],
    ["power", p.power.stuckMs, p.power.stuckMove, "rack power has no loop of its own"],
    ["flow", p.flow.stuckMs, p.flow.stuckMove, ""],
    ["pressure", p.pressure.stuckMs, p.pressure.stuckMove, ""],
  ];
  for (const [kind, stuckMs, stuckMove, noLoop] of timeAlone) {
    if (stuckMs <= 0) continue;
    if (stuckMove <= 0) out.push(`control.points.${kind}.stuckMs: with stuckMove 0, time alone judges every ${kind} point: a steady, noiseless plant reads unchanged for longer than ${stuckMs} ms and trips it`);
    else if (noLoop !== "") out.push(`control.points.${kind}.stuckMs: ${noLoop}, so time alone judges them: a steady, noiseless plant reads unchanged for longer than ${stuckMs} ms and trips them`);
  }
  out.push(...pumpWarnings(c.cdu));
  return out;
}
