// What `podwarden io force <output>` would move, from the config: a loop check forces one output
// for a lease. An output a control loop drives (a rack's control valve, a pump's speed, the CDU's
// supply valve) is forced as that loop's leased Override, so it already has everything an
// operator's decision has: saved before it applies and restored with its lease's time after a
// restart, audited, shown on the HMI, ended by its lease, and outranked by every interlock in the
// hot path. Every other output keeps a job a force must not take from it: an isolation valve is
// the leak path's (it moves with isolate-rack, return-rack and a partial-stroke test, each with
// its own checks), a rack's power output follows its coolant, a pump's run enable keeps coolant
// in every rack, and a fail-position or heartbeat register is the device lease's.
import type { PodConfig } from "../../pod/config.js";
import type { PodLayout } from "../../pod/layout.js";
import { cduPumps } from "../../pod/pumps.js";

export type ForceTarget =
  /** a control loop's output: forced as the loop's leased Override */
  | { kind: "loop"; loop: number; what: string }
  /** a rack's isolation valve */
  | { kind: "isolation"; rack: number; what: string }
  /** an output a force must not move, and why */
  | { kind: "refused"; what: string; why: string };

type Source = Pick<PodConfig, "racks" | "cdu">;

const LEASE_OWNS = "a fail position is the device lease's, written from the config (docs/safety.md, Device leases)";

/** The target of a force of `output`, or null when the config names no such output. */
export function forceTarget(c: Source, layout: PodLayout, output: string): ForceTarget | null {
  for (let i = 0; i < c.racks.length; i++) {
    const r = c.racks[i];
    const o = r.outputs;
    if (o.valve === output) return { kind: "loop", loop: layout.rackLoops[i], what: `${r.name}'s control valve` };
    if (o.supplyIsolation === output || o.returnIsolation === output) return { kind: "isolation", rack: i, what: `${r.name}'s ${o.supplyIsolation === output ? "supply" : "return"} isolation valve` };
    if (o.powerOff === output || o.powerCap === output) return { kind: "refused", what: `${r.name}'s power ${o.powerOff === output ? "off" : "cap"}`, why: "a rack's power follows its coolant (racks[].noCoolant) and its budget; a force cannot take it from them" };
    if (o.failValve === output || o.failIsolationOpen === output) return { kind: "refused", what: `${r.name}'s lease fail position`, why: LEASE_OWNS };
  }
  for (const p of cduPumps(c.cdu)) {
    if (p.speed === output) return { kind: "loop", loop: layout.pumpLoop, what: `the pump loop (pump ${p.name}'s speed while it runs)` };
    if (p.enable === output) return { kind: "refused", what: `pump ${p.name}'s run enable`, why: "a pump's run keeps coolant in every rack; pump duty and the supervisor decide it" };
    if (p.failSpeed === output) return { kind: "refused", what: `pump ${p.name}'s lease fail speed`, why: LEASE_OWNS };
  }
  const supply = c.cdu.supplyControl;
  if (supply !== undefined && layout.supplyLoop !== undefined && supply.valve === output) return { kind: "loop", loop: layout.supplyLoop, what: "the CDU's supply valve (primary side)" };
  if (supply?.failValve === output) return { kind: "refused", what: "the CDU's supply valve's lease fail position", why: LEASE_OWNS };
  return null;
}
