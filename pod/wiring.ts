// The pod's wiring, pure: which hot-path point a field sample feeds, and which actuator writes
// the hot path's outputs and the supervisor's decisions come to. The daemon and the virtual pod
// both run it; only what carries samples in and writes out differs (the control worker's frames
// and the Modbus driver, or the simulated devices in virtual time).
import type { BankViews } from "../hotpath-as/views.js";
import * as L from "../hotpath-as/assembly/layout.js";
import type { Point } from "../lib/points.js";
import type { ControlConfig, PodConfig } from "./config.js";
import { rackFailSafe, safeValue } from "./fail-safe.js";
import type { PodLayout } from "./layout.js";
import { cduPumps, type PumpSpec } from "./pumps.js";

/**
 * How often the actuators are written when nothing urgent happened, ms. An interlock change
 * (a rack isolating, a loop entering or leaving leak priority) is written at once besides.
 */
export const ACTUATOR_PASS_MS = 50;

/** Where routed samples go: the control worker's frames, or a bank directly in virtual time. */
export interface SampleSink {
  writeSample(point: number, value: number, sourceTimeMs: number): void;
}

/** Where actuator writes go, in engineering units: the Modbus driver, or simulated devices. */
export interface OutputSink {
  setOutput(id: string, value: number): void;
}

/** The hot-path outputs the writes are computed from (the worker's frames or the bank's views). */
export interface PodOutputs {
  loopOut: ArrayLike<number>;
  rackSupplyOpen: ArrayLike<number>;
  rackReturnOpen: ArrayLike<number>;
}

/** What the supervisor decided about power and the pumps. */
export interface PodDecisions {
  /** false: every pump stopped (an unproven isolation's escalation) */
  pumpEnable: boolean;
  /** per pump (pod/pumps.ts order), whether it runs: the lead, and the old lead through a rotation's overlap */
  pumpRun: boolean[];
  /** the lead pump's index, with redundant pumps (a running pump that is not the lead is handing over) */
  pumpLead?: number;
  rackPowerOff: boolean[];
  powerCapsKw: number[];
  /**
   * The rack's isolation valves are open again but its coolant is not back yet (no good flow
   * reading at the loss-of-flow minimum): its power stays at the no-coolant limit until it is.
   */
  coolantPending: boolean[];
}

export interface WiringOptions {
  /** write each rack's power cap to its powerCap output */
  writeCaps: boolean;
}

/** A command value as the devices are sent it: 0.1 of a unit, so noise in the 15th digit is not a new write. */
export const tenth = (v: number): number => Math.round(v * 10) / 10;

export class PodWiring {
  private readonly routes = new Map<string, number[]>();
  /** leak inputs, with the last value routed: a change is decided at once, not at the next tick */
  private readonly leakPoints = new Map<string, number>();
  /** each rack's isolation valves held closed for a partial-stroke test: bit 1 supply, bit 2 return */
  private readonly stroke: Uint8Array;
  /** the CDU's pumps, in lead/lag order */
  private readonly pumps: PumpSpec[];

  constructor(
    private readonly pod: Pick<PodConfig, "racks" | "cdu">,
    readonly layout: PodLayout,
    private readonly opts: WiringOptions,
  ) {
    this.stroke = new Uint8Array(pod.racks.length);
    pod.racks.forEach((r, i) => {
      const p = layout.racks[i];
      this.route(r.points.returnTempC, p.returnTempC);
      this.route(r.points.supplyTempC, p.supplyTempC);
      this.route(r.points.flowLpm, p.flowLpm);
      this.route(r.points.powerKw, p.powerKw);
      r.points.leak.forEach((id, k) => {
        this.route(id, p.leaks[k]);
        this.leakPoints.set(id, NaN);
      });
      const { supplyIsolationClosedLimit: sl, returnIsolationClosedLimit: rl } = r.points;
      if (sl !== undefined && p.supplyClosedLimit !== undefined) this.route(sl, p.supplyClosedLimit);
      if (rl !== undefined && p.returnClosedLimit !== undefined) this.route(rl, p.returnClosedLimit);
    });
    this.route(pod.cdu.points.dpKpa, layout.cdu.dpKpa);
    // without a CDU supply sensor its bank point is never sampled: no loop reads it
    if (pod.cdu.points.supplyTempC !== undefined) this.route(pod.cdu.points.supplyTempC, layout.cdu.supplyTempC);
    this.pumps = cduPumps(pod.cdu);
    this.pumps.forEach((p, i) => {
      const slots = layout.cdu.pumps[i];
      if (p.fault !== undefined && slots?.fault !== undefined) this.route(p.fault, slots.fault);
      if (p.running !== undefined && slots?.running !== undefined) this.route(p.running, slots.running);
    });
  }

  private route(pointId: string, bankIndex: number): void {
    const list = this.routes.get(pointId) ?? [];
    list.push(bankIndex);
    this.routes.set(pointId, list);
  }

  /** The field points the hot path reads. */
  get inputs(): IterableIterator<string> {
    return this.routes.keys();
  }

  isLeakInput(pointId: string): boolean {
    return this.leakPoints.has(pointId);
  }

  /**
   * Feeds a field point to the hot-path points it is wired to. Good: the sample; invalid: NaN
   * now (the hot path rejects it); a communication failure: nothing, so the sample ages and the
   * stale check fails the loop safe in time. Returns true when a leak input changed (wet, dry,
   * cable fault, unreadable): the caller ticks at once rather than at the next period.
   */
  routeSample(p: Point, sink: SampleSink, nowMs: number): boolean {
    const idx = this.routes.get(p.id);
    if (idx === undefined) return false;
    if (p.quality !== "good" && p.quality !== "invalid") return false;
    const value = p.quality === "good" ? p.value : NaN;
    const sourceTimeMs = p.quality === "good" ? p.sourceTimeMs : nowMs;
    for (const i of idx) sink.writeSample(i, value, sourceTimeMs);
    const lastLeak = this.leakPoints.get(p.id);
    if (lastLeak === undefined || Object.is(lastLeak, value)) return false;
    this.leakPoints.set(p.id, value);
    return true;
  }

  /**
   * No caps, no power-off, the pumps enabled with `lead` running: the decisions before the
   * supervisor's first pass (agent/supervisor/pump-duty.ts: the rotation's lead, so the first
   * pass does not hand over at once).
   */
  initialDecisions(lead = 0): PodDecisions {
    return {
      pumpEnable: true,
      pumpRun: this.pumps.map((_, i) => i === lead),
      pumpLead: lead,
      rackPowerOff: this.pod.racks.map(() => false),
      powerCapsKw: this.pod.racks.map((r) => r.ratedKw),
      coolantPending: this.pod.racks.map(() => false),
    };
  }

  /**
   * A rack without coolant: either of its isolation valves commanded closed (a leak latch, or an
   * operator's isolation). Its power then goes to its no-coolant limit (racks[].noCoolant).
   */
  static noCoolant(o: Pick<PodOutputs, "rackSupplyOpen" | "rackReturnOpen">, rack: number): boolean {
    return o.rackSupplyOpen[rack] === 0 || o.rackReturnOpen[rack] === 0;
  }

  /**
   * The power commands in force for rack i: the supervisor's decisions, with coolant and power
   * coupled. A rack without coolant is powered off or held to its no-coolant cap, whatever its
   * budget allows; a cap output whose rack couples by cap is written even with writeCaps off
   * (the rack's rating then, so the isolation's cap is lifted when coolant returns).
   */
  powerCommand(o: Pick<PodOutputs, "rackSupplyOpen" | "rackReturnOpen">, d: PodDecisions, i: number): { powerOff: boolean; capKw: number; writeCap: boolean } {
    const r = this.pod.racks[i];
    // no coolant: a valve commanded closed, or reopened with the flow not yet back
    const dry = PodWiring.noCoolant(o, i) || d.coolantPending[i];
    const byCap = r.noCoolant.action === "cap";
    const budgetCap = this.opts.writeCaps ? d.powerCapsKw[i] : r.ratedKw;
    return {
      powerOff: d.rackPowerOff[i] || (dry && r.noCoolant.action === "power-off"),
      capKw: dry && byCap ? Math.min(budgetCap, r.noCoolant.capKw) : budgetCap,
      writeCap: this.opts.writeCaps || byCap,
    };
  }

  /**
   * Sends every actuator its command, safety first: all isolation valves before anything else
   * (on a leak their close commands must not queue behind the rack's valve or cap writes), then
   * each rack's power-off and cap (an isolated rack's power follows its coolant at once), valve,
   * then the pump; last, the devices' own fail positions (`leaseFail`, pod/fail-safe.ts), which
   * change only with the config and so go out again only when a device lost them.
   */
  writeActuators(o: PodOutputs, d: PodDecisions, sink: OutputSink, leaseFail: readonly { id: string; value: number }[] = []): void {
    const racks = this.pod.racks;
    const lay = this.layout;
    const set = (id: string | undefined, v: number): void => {
      if (id !== undefined && Number.isFinite(v)) sink.setOutput(id, v);
    };
    this.writeIsolation(o, sink);
    this.writePower(o, d, sink);
    for (let i = 0; i < racks.length; i++) set(racks[i].outputs.valve, tenth(o.loopOut[lay.rackLoops[i]]));
    // a pump that stands by is sent 0 and its enable off; with no run decision for it (decisions
    // made before pump duty, as an old flight recording's) the lone pump or the first runs
    this.pumps.forEach((p, i) => {
      const run = d.pumpRun[i] ?? i === 0;
      set(p.speed, run ? tenth(o.loopOut[lay.pumpLoop]) : 0);
      set(p.enable, d.pumpEnable && run ? 1 : 0);
    });
    const supply = this.pod.cdu.supplyControl;
    if (supply !== undefined && lay.supplyLoop !== undefined) set(supply.valve, tenth(o.loopOut[lay.supplyLoop]));
    for (const w of leaseFail) set(w.id, w.value);
  }

  /**
   * Sends every rack's isolation valves their commands: the first writes of every actuator pass,
   * and all the leak thread (agent/control/leak-thread.ts) writes.
   */
  writeIsolation(o: Pick<PodOutputs, "rackSupplyOpen" | "rackReturnOpen">, sink: OutputSink): void {
    const racks = this.pod.racks;
    for (let i = 0; i < racks.length; i++) {
      const out = racks[i].outputs;
      const held = this.stroke[i];
      // a partial-stroke test can only turn an open command into a close, never the other way
      if (Number.isFinite(o.rackSupplyOpen[i])) sink.setOutput(out.supplyIsolation, held & 1 ? 0 : o.rackSupplyOpen[i]);
      if (Number.isFinite(o.rackReturnOpen[i])) sink.setOutput(out.returnIsolation, held & 2 ? 0 : o.rackReturnOpen[i]);
    }
  }

  /**
   * Sends every rack its power-off and cap commands (powerCommand): the second writes of every
   * actuator pass, and the leak thread's right after its isolation writes, so a rack that loses
   * its coolant loses its power with it whatever the main thread is doing.
   */
  writePower(o: Pick<PodOutputs, "rackSupplyOpen" | "rackReturnOpen">, d: PodDecisions, sink: OutputSink): void {
    const racks = this.pod.racks;
    for (let i = 0; i < racks.length; i++) {
      const out = racks[i].outputs;
      const p = this.powerCommand(o, d, i);
      if (out.powerOff !== undefined) sink.setOutput(out.powerOff, p.powerOff ? 1 : 0);
      if (p.writeCap && out.powerCap !== undefined && Number.isFinite(p.capKw)) sink.setOutput(out.powerCap, tenth(p.capKw));
    }
  }

  /**
   * Holds rack `rack`'s isolation valves closed for a partial-stroke test (bits: 1 supply, 2
   * return; 0 releases them), over whatever the hot path commands (agent/health/isolation-stroke.ts).
   * Only the writes see it: the rack keeps its coolant through a partial stroke, so its power
   * coupling (noCoolant) follows the hot path's commands alone. The caller writes the isolation
   * valves afterwards.
   */
  setStroke(rack: number, bits: number): void {
    this.stroke[rack] = bits & 3;
  }

  /**
   * The field points and outputs of the leak path: every leak input and isolation valve, and
   * every rack's power-off and cap, which follow the isolation valves (powerCommand).
   */
  leakPath(): { inputs: string[]; outputs: string[] } {
    const outputs = this.pod.racks.flatMap((r) => [r.outputs.supplyIsolation, r.outputs.returnIsolation, r.outputs.powerOff, r.outputs.powerCap].filter((id): id is string => id !== undefined));
    return { inputs: [...this.leakPoints.keys()], outputs };
  }

  /**
   * The leak-path outputs with a value that takes their rack toward safety: 0 for an isolation
   * valve (closed), 1 for a power-off (off). A cap has none: a lower cap is not always the safe one.
   */
  safeSides(): Map<string, 0 | 1> {
    const m = new Map<string, 0 | 1>();
    for (const r of this.pod.racks) {
      m.set(r.outputs.supplyIsolation, 0).set(r.outputs.returnIsolation, 0);
      if (r.outputs.powerOff !== undefined) m.set(r.outputs.powerOff, 1);
    }
    return m;
  }

  /**
   * The writes that put each control actuator in its declared shutdown state (safeOnShutdown,
   * the rack's own or its kind's), for a clean stop. Isolation valves are left as they are: an
   * isolated rack stays isolated, and the devices' own leases take over from there. `running`:
   * the pumps running now (PodDecisions.pumpRun); a pump standing by is kept at 0.
   */
  safeWrites(o: PodOutputs | undefined, control: Pick<ControlConfig, "rackLoop" | "pumpLoop" | "supplyLoop" | "isolation">, running?: readonly boolean[]): { id: string; value: number }[] {
    const lay = this.layout;
    const k = control.rackLoop;
    const p = control.pumpLoop;
    const current = (loop: number): number => o?.loopOut[loop] ?? NaN;
    const valve = this.pod.cdu.supplyControl?.valve;
    const t = control.supplyLoop;
    const supply = valve === undefined || lay.supplyLoop === undefined ? [] : [{ id: valve, value: tenth(safeValue(t.safeOnShutdown, t.outMin, t.outMax, current(lay.supplyLoop))) }];
    return [
      ...this.pod.racks.map((r, i) => ({ id: r.outputs.valve, value: tenth(safeValue(rackFailSafe(control, r).safeOnShutdown, k.outMin, k.outMax, current(lay.rackLoops[i]))) })),
      // each pump: its drive holds the command from here, and a standby stays stopped
      ...this.pumps.map((pump, i) => ({ id: pump.speed, value: (running?.[i] ?? i === 0) ? tenth(safeValue(p.safeOnShutdown, p.outMin, p.outMax, current(lay.pumpLoop))) : 0 })),
      ...supply,
    ];
  }
}

/**
 * When the daemon writes the actuators, for a pod run in virtual time (the virtual pod, a flight
 * recording's replay): at once after a step that changed an interlock, and every
 * ACTUATOR_PASS_MS of tick time besides, from the first step on.
 */
export class ActuatorSchedule {
  private readonly interlocks: InterlockChangeDetector;
  private nextMs: number | null = null;

  constructor(loops: number, racks: number) {
    this.interlocks = new InterlockChangeDetector(loops, racks);
  }

  /** Asked after every step, with its tick time: whether the actuators are written now. */
  due(v: BankViews, nowMs: number): boolean {
    // the detector must see every step, whether or not a pass is due anyway
    const changed = this.interlocks.changed(v);
    if (this.nextMs === null || nowMs >= this.nextMs) {
      this.nextMs = (this.nextMs ?? nowMs) + ACTUATOR_PASS_MS;
      return true;
    }
    return changed;
  }
}

/**
 * Watches a bank for the output changes that must reach the devices at once rather than at the
 * next actuator pass: an isolation valve command that changed, or a loop entering or leaving
 * leak priority. The control worker and the virtual pod both ask it after every step.
 */
export class InterlockChangeDetector {
  private readonly lastBranch: Int32Array;
  private readonly lastIso: Int32Array;

  constructor(
    private readonly loops: number,
    private readonly racks: number,
  ) {
    this.lastBranch = new Int32Array(loops);
    this.lastIso = new Int32Array(2 * racks).fill(1);
  }

  changed(v: BankViews): boolean {
    let changed = false;
    for (let i = 0; i < this.loops; i++) {
      const b = v.loopI.branch[i];
      const was = this.lastBranch[i];
      if (b !== was && (b === L.BRANCH_LEAK || was === L.BRANCH_LEAK)) changed = true;
      this.lastBranch[i] = b;
    }
    for (let r = 0; r < this.racks; r++) {
      const s = v.rackI.supplyOpen[r];
      const ret = v.rackI.returnOpen[r];
      if (s !== this.lastIso[2 * r] || ret !== this.lastIso[2 * r + 1]) changed = true;
      this.lastIso[2 * r] = s;
      this.lastIso[2 * r + 1] = ret;
    }
    return changed;
  }
}
