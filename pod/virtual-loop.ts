// The pod loop in virtual time: samples routed through the pod wiring into the bank, the hot path
// stepped tick by tick, and the actuator pass on the daemon's schedule (an interlock change at
// once, the rest every ACTUATOR_PASS_MS) with the devices' lease fail positions, as the daemon
// writes them. One loop serves the virtual pod (sim/virtual-pod.ts), the flight replay
// (agent/recorder/flight-replay.ts) and the telemetry replay (hil/telemetry-replay.ts): each was
// its own copy, and they had drifted (the flight replay wrote no lease fail positions).
import * as L from "../hotpath-as/assembly/layout.js";
import { writeSample } from "../hotpath-as/bank-config.js";
import type { HotPath } from "../hotpath-as/views.js";
import type { Point } from "../lib/points.js";
import type { PodConfig } from "./config.js";
import { leaseFailWrites } from "./fail-safe.js";
import { podLayout, type PodLayout } from "./layout.js";
import { ActuatorSchedule, PodWiring, type OutputSink, type PodDecisions, type PodOutputs, type SampleSink } from "./wiring.js";

/** What the loop wires: a pod's racks, CDU and tuning, and whether power caps are written. */
export type VirtualLoopPod = Pick<PodConfig, "racks" | "cdu" | "control"> & { writeCaps: boolean };

/** The part of a pod's config (an agent config is one) the loop wires; caps written unless it says not. */
export function virtualLoopPod(c: Pick<PodConfig, "racks" | "cdu" | "control"> & { supervisor?: { powerBudget: { writeCaps: boolean } } }): VirtualLoopPod {
  return { racks: c.racks, cdu: c.cdu, control: c.control, writeCaps: c.supervisor?.powerBudget.writeCaps ?? true };
}

export class VirtualTimeLoop implements SampleSink {
  readonly layout: PodLayout;
  readonly wiring: PodWiring;
  /** what the supervisor decided (power caps, power-off, the pumps): a supervisor or a caller sets it */
  decisions: PodDecisions;
  /** actuator passes so far: the writes of the first are the initial commands, not changes */
  passes = 0;
  /** the tick time of the last actuator pass */
  passMs = NaN;
  private readonly schedule: ActuatorSchedule;
  /** the bank's outputs: views of the hot path's memory, which never grows (hotpath-as/wasm-bank.ts) */
  private readonly outputs: PodOutputs;
  private readonly leaseFail: { id: string; value: number }[];

  /** `hp` carries the pod's bank, loaded by the caller (from the config, or from a recording). */
  constructor(
    pod: VirtualLoopPod,
    readonly hp: HotPath,
    private readonly sink: OutputSink,
  ) {
    this.layout = podLayout(pod);
    this.wiring = new PodWiring(pod, this.layout, { writeCaps: pod.writeCaps });
    this.decisions = this.wiring.initialDecisions();
    this.schedule = new ActuatorSchedule(this.layout.loops, this.layout.racks.length);
    this.leaseFail = leaseFailWrites(pod);
    const v = hp.views;
    this.outputs = { loopOut: v.loopF.out, rackSupplyOpen: v.rackI.supplyOpen, rackReturnOpen: v.rackI.returnOpen };
  }

  /** SampleSink: a routed sample goes straight into the bank. */
  writeSample(point: number, value: number, sourceTimeMs: number): void {
    writeSample(this.hp.views, point, value, sourceTimeMs);
  }

  /** A driver's point, routed by the pod wiring as the daemon routes it (`nowMs` stamps an invalid one). */
  route(pt: Point, nowMs: number): void {
    this.wiring.routeSample(pt, this, nowMs);
  }

  /**
   * One hot-path step at `tickMs`, then the actuator pass if one is due. Returns whether a pass
   * ran. Throws when the hot path refuses the tick (`what` names it in the message).
   */
  step(tickMs: number, dtS: number, what = `tick at ${tickMs} ms`): boolean {
    const rc = this.hp.step(tickMs, dtS);
    if (rc !== L.STEP_OK) throw new Error(`the hot path refused ${what} (code ${rc})`);
    if (!this.schedule.due(this.hp.views, tickMs)) return false;
    this.passes++;
    this.passMs = tickMs;
    this.wiring.writeActuators(this.outputs, this.decisions, this.sink, this.leaseFail);
    return true;
  }
}
