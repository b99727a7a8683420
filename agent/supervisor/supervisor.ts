// The pod supervisor: modes, alarms, leak escalation, over-temperature, loss of flow, the
// heat-balance cross-check and the power budget. It runs on the main thread every
// supervisor.periodMs, on the control worker's outputs and the drivers' points; the fast
// safety decisions themselves are the hot path's.
import * as L from "../../hotpath-as/assembly/layout.js";
import type { IsolationConfig, PodConfig } from "../../pod/config.js";
import type { PodLayout } from "../../pod/layout.js";
import { badInputs, degradedWords, failsafeReasons, inFailsafe, leakSensorFault } from "../../pod/status-words.js";
import type { PodDecisions } from "../../pod/wiring.js";
import type { SupervisorConfig } from "./schema.js";
import { alarmTiming } from "./alarm-classes.js";
import { AlarmManager, inFamily, type AlarmEvent, type SuppressionRule } from "./alarms.js";
import { heatBalance } from "./heat-balance.js";
import { NoCoolantWatch } from "./no-coolant.js";
import { PowerPass } from "./power-pass.js";
import { PumpDuty, type DutyEvent, type PumpReadings } from "./pump-duty.js";
import { cduPumps, pumpsStoppable } from "../../pod/pumps.js";

export type PodMode = "Starting" | "Running" | "Degraded" | "Failsafe";

/**
 * The Warnings that maintenance work is expected to cause (a device unplugged, a sensor swapped,
 * a loop in fail-safe while it is, the budget or the tick rate disturbed by it): maintenance
 * suppresses these, and nothing else. Never a Critical, never a leak, a leak sensor, a flow meter
 * an isolation relies on, an isolation's proof, power that did not follow coolant, or lost state:
 * a family not listed here is never suppressed, so a new alarm is loud until someone decides.
 */
const MAINTENANCE_SUPPRESSES = ["failsafe:", "degraded:", "device:", "heat-balance:", "overtemp:", "power:budget", "control:overrun"];

export const suppressedByMaintenance: SuppressionRule = (a) => a.severity === "Warning" && MAINTENANCE_SUPPRESSES.some((f) => inFamily(a.id, f));

import type { Reading } from "./reading.js";

export type { Reading };

export interface SupervisorInputs {
  nowMs: number;
  controlHealthy: boolean;
  /** control ticks run, and ticks that missed their deadline, over the recent window (supervisor.overrun.windowMs) */
  recentTicks: { ticks: number; overruns: number; spanMs: number };
  loopStatus: readonly number[];
  loopOut: readonly number[];
  rackState: readonly number[];
  rackStatus: readonly number[];
  racks: readonly {
    returnTempC: Reading;
    supplyTempC: Reading;
    flowLpm: Reading;
    powerKw: Reading;
    /** its leak inputs (the alarm for a faulty one says which fault) */
    leak?: readonly Reading[];
    manualIsolate: boolean;
    /** an isolation valve is commanded closed: the rack's power must follow to its no-coolant limit */
    noCoolant?: boolean;
  }[];
  cduSupplyTempC: Reading;
  /** the pump loop's PV */
  cduDpKpa: Reading;
  /** each pump's status inputs (pod/pumps.ts order), where it has them */
  pumps?: readonly PumpReadings[];
  /** wall-clock ms since the epoch, for the pumps' duty rotation (default: nowMs) */
  wallMs?: number;
  devices: readonly { name: string; ok: boolean; why: string }[];
}

/** What the supervisor decides each pass: the pod stage writes it to the power and pump outputs. */
export type SupervisorDecisions = PodDecisions;

export type SupervisorEvent = AlarmEvent | { type: "mode.changed"; from: PodMode; to: PodMode; reason: string } | { type: "leak.escalated"; rack: string; actions: string[] } | { type: "isolation.proven"; rack: string }
  | { type: "maintenance.changed"; on: boolean }
  | DutyEvent;

export class Supervisor {
  readonly alarms: AlarmManager;
  private mode_: PodMode = "Starting";
  private maintenance_ = false;
  private readonly startedAtMs: number;
  private readonly overTier: number[];
  private readonly lowFlowSince: (number | null)[];
  /** since when each rack's heat balance has disagreed with its return temperature steady (ms), and that temperature */
  private readonly heatSince: ({ ms: number; returnC: number } | null)[];
  private readonly manualIsolatedSince: (number | null)[];
  private readonly noCoolant: NoCoolantWatch;
  private isolation: IsolationConfig;
  private readonly proven: boolean[];
  private readonly escalated: boolean[];
  private readonly power: PowerPass;
  private everRunning = false;
  private budgetOverrideKw: number | null = null;
  /** lead/lag duty, with redundant pumps (cdu.pumps) */
  readonly pumpDuty: PumpDuty | null;

  constructor(
    private s: SupervisorConfig,
    /** the racks (names, ratings, priorities, escalation outputs), the CDU, and the isolation proof */
    private readonly pod: Pick<PodConfig, "racks" | "cdu" | "control">,
    private readonly layout: PodLayout,
    private readonly emit: (e: SupervisorEvent) => void,
    now: () => number,
    /** wall-clock ms since the epoch: where the pumps' duty rotation starts */
    wallMs: number = Date.now(),
    /** the pumps' lead to keep (a structural reload carries it over) */
    pumpLead?: string,
  ) {
    this.alarms = new AlarmManager(s.alarmClearDwellMs, emit, now);
    this.alarms.setPolicy(alarmTiming(s), s.alarmChatter);
    this.startedAtMs = now();
    const n = pod.racks.length;
    this.overTier = new Array<number>(n).fill(0);
    this.lowFlowSince = new Array<number | null>(n).fill(null);
    this.heatSince = new Array<{ ms: number; returnC: number } | null>(n).fill(null);
    this.manualIsolatedSince = new Array<number | null>(n).fill(null);
    this.noCoolant = new NoCoolantWatch(n);
    this.isolation = pod.control.isolation;
    this.proven = new Array<boolean>(n).fill(false);
    this.escalated = new Array<boolean>(n).fill(false);
    this.power = new PowerPass(pod.racks);
    this.pumpDuty = pod.cdu.pumps === undefined ? null : new PumpDuty(cduPumps(pod.cdu).map((p) => p.name), pod.cdu.pumpDuty, wallMs, pumpLead);
  }

  get mode(): PodMode {
    return this.mode_;
  }

  /** New tuning (SIGHUP): same racks, new thresholds. */
  reconfigure(s: SupervisorConfig, isolation: IsolationConfig = this.isolation): void {
    this.s = s;
    this.pumpDuty?.release();
    this.isolation = isolation;
    this.alarms.setPolicy(alarmTiming(s), s.alarmChatter);
  }

  /**
   * Maintenance: an operator says work is under way. It changes no control and no interlock; it
   * suppresses the Warnings the work is expected to cause (suppressedByMaintenance), and shows
   * beside the mode, which keeps telling the truth (Degraded stays Degraded).
   */
  setMaintenance(on: boolean): void {
    if (on === this.maintenance_) return;
    this.maintenance_ = on;
    this.alarms.setSuppression(on ? suppressedByMaintenance : () => false);
    this.emit({ type: "maintenance.changed", on });
  }

  get maintenance(): boolean {
    return this.maintenance_;
  }

  /** Each device's health at the last pass (its breaker: answering or not), alarms' delays aside. */
  get devices(): SupervisorInputs["devices"] {
    return this.devices_;
  }
  private devices_: SupervisorInputs["devices"] = [];

  /** The pod power budget in force: mission control's, if it set one, else the configured one. */
  get powerBudgetKw(): number {
    return this.budgetOverrideKw ?? this.s.powerBudget.podKw;
  }

  /** Sets (or, with null, withdraws) mission control's pod power budget. */
  setPowerBudget(kw: number | null): void {
    this.budgetOverrideKw = kw;
  }

  private setMode(to: PodMode, reason: string): void {
    if (to === this.mode_) return;
    const from = this.mode_;
    this.mode_ = to;
    this.emit({ type: "mode.changed", from, to, reason });
  }

  evaluate(i: SupervisorInputs): SupervisorDecisions {
    const s = this.s;
    const c = this.pod;
    const a = this.alarms;
    const now = i.nowMs;
    const nRacks = c.racks.length;

    // ---- control health ------------------------------------------------------------------
    a.update("control:stalled", !i.controlHealthy, { severity: "Critical", source: "control", message: "control loop not ticking: devices will fall back to their fail positions" });
    // a share of the window, not any overrun: one late tick is not a pod problem (and must not
    // flip the mode and the retained state twice); sustained lateness is
    const rt = i.recentTicks;
    a.update("control:overrun", rt.overruns > 0 && rt.overruns > s.overrun.maxShare * rt.ticks, {
      severity: "Warning",
      source: "control",
      message: `control ticks missed their deadline: ${rt.overruns} of ${rt.ticks} in the last ${(rt.spanMs / 1000).toFixed(1)} s (more than ${100 * s.overrun.maxShare} %)`,
    });

    // Start-up suppression (ISA-18.2): while the pod is Starting its inputs arrive one by one
    // over the first seconds, and every loop, leak sensor, flow meter and device reads as not
    // there yet; these alarms wait until it is not (at most 30 s), and the mode's single
    // Starting state says what it waits for. It raised about 20 Warnings and a Critical at each
    // start that cleared within seconds (issue #53). The hot path's responses are not held.
    const starting = this.mode_ === "Starting";

    // ---- devices ---------------------------------------------------------------------------
    this.devices_ = i.devices;
    for (const d of i.devices) a.update(`device:${d.name}`, !d.ok && !starting, { severity: "Warning", source: d.name, message: `device ${d.name} ${d.why}` });

    // ---- loops -----------------------------------------------------------------------------
    let anyFailsafe = false;
    let allLive = true;
    for (let idx = 0; idx < this.layout.loops; idx++) {
      const name = this.layout.loopName(idx);
      const st = i.loopStatus[idx] ?? 0;
      const fs = inFailsafe(st);
      if (fs) anyFailsafe = true;
      if (fs || st === 0) allLive = false;
      // name the bad input: a rack loop's are its return temperature (PV) and power (feed-forward),
      // the pump loop's its differential pressure (PV), the supply loop's the CDU's supply temperature
      const r = this.layout.rackOfLoop(idx);
      const rack = r === undefined ? undefined : i.racks[r];
      const pv = rack !== undefined ? rack.returnTempC : this.layout.loopKind(idx) === "supply" ? i.cduSupplyTempC : i.cduDpKpa;
      const bad = badInputs(st);
      const detail = bad.pv && pv.why !== undefined ? ` (${pv.why})` : "";
      a.update(`failsafe:${name}`, fs && !starting, { severity: "Warning", source: name, message: `${name} in fail-safe: ${failsafeReasons(st)}${detail}` });
      // a secondary input gone bad: the loop keeps control in a degraded mode, and says what it lost
      // (not while the pod is Starting: its inputs arrive over the first seconds, one by one)
      const lost = fs || starting ? [] : degradedWords(st, rack?.powerKw.why, rack?.flowLpm.why);
      a.update(`degraded:${name}`, lost.length > 0, { severity: "Warning", source: name, message: `${name} in control, degraded: ${lost.join("; ")}` });
    }

    // ---- racks -----------------------------------------------------------------------------
    const decisions: SupervisorDecisions = { pumpEnable: true, pumpRun: [true], rackPowerOff: new Array<boolean>(nRacks).fill(false), powerCapsKw: this.power.caps, coolantPending: this.noCoolant.coolantPending.slice() };
    c.racks.forEach((rack, r) => {
      const state = i.rackState[r] ?? L.RACK_NORMAL;
      const status = i.rackStatus[r] ?? 0;
      const x = i.racks[r];
      // the hot path holds the latch, and only an authorised reset returns the rack to normal:
      // the alarm says it is latched, and that reset is what lets it clear
      if (state === L.RACK_NORMAL) a.reset(`leak:${rack.name}`);
      a.update(`leak:${rack.name}`, state !== L.RACK_NORMAL, { severity: "Critical", source: rack.name, latch: true, message: `leak at ${rack.name}: rack isolated, latched until an authorised reset` });
      a.update(`leak-sensor:${rack.name}`, leakSensorFault(status) && !starting, { severity: "Warning", source: rack.name, message: leakSensorWords(rack.name, x.leak ?? []) });
      const isProven = state === L.RACK_ISOLATED;
      if (isProven && !this.proven[r]) this.emit({ type: "isolation.proven", rack: rack.name });
      this.proven[r] = isProven;

      const escalate = state === L.RACK_ESCALATED;
      const actions: string[] = [];
      if (escalate) {
        if (s.escalation.rackPowerOff && rack.outputs.powerOff !== undefined) {
          decisions.rackPowerOff[r] = true;
          actions.push("rack power-off requested");
        }
        if (s.escalation.pumpStop && pumpsStoppable(c.cdu)) {
          decisions.pumpEnable = false;
          actions.push("pump stopped");
        }
      }
      if (escalate && !this.escalated[r]) this.emit({ type: "leak.escalated", rack: rack.name, actions });
      this.escalated[r] = escalate;
      // not proven for want of a reading is not the same as flow that did not stop, nor as a valve
      // that never reached its closed limit (seized, with the flow under the threshold): say which
      const flowStopped = x.flowLpm.good && x.flowLpm.value < this.isolation.isolatedFlowMaxLpm;
      const limitsClosed = (status & L.RS_LIMITS_CLOSED) !== 0;
      const why = !x.flowLpm.good
        ? `the flow meter has no good reading (${x.flowLpm.why ?? "unknown"})`
        : !flowStopped
          ? "flow has not stopped"
          : !limitsClosed
            ? "an isolation valve is not at its closed limit switch (seized, or the switch has no good reading)"
            : "flow came back, or a valve left its closed limit";
      // an operator's isolation is proven the same way, on the same deadline: someone may be about
      // to open a hose on the strength of it. It does not escalate (there is no leak), it alarms
      const manual = state === L.RACK_NORMAL && x.manualIsolate === true;
      this.manualIsolatedSince[r] = manual ? (this.manualIsolatedSince[r] ?? now) : null;
      const manualUnproven = manual && now - (this.manualIsolatedSince[r] ?? now) >= this.isolation.deadlineMs && !(flowStopped && limitsClosed);
      const flowNow = x.flowLpm.good ? ` (${x.flowLpm.value.toFixed(1)} L/min)` : "";
      a.update(`isolation-failed:${rack.name}`, escalate || manualUnproven, {
        severity: "Critical",
        source: rack.name,
        message: escalate
          ? `isolation of ${rack.name} not proven: ${why}${actions.length > 0 ? `; ${actions.join(", ")}` : "; no escalation output configured"}`
          : `operator isolation of ${rack.name} not proven after ${this.isolation.deadlineMs / 1000} s: ${why}${flowNow}; do not open its lines`,
      });

      // the flow meter is what proves an isolation (and what shows a loss of flow): without a good
      // reading neither can be proven, so it says so before a leak needs it. Critical while the
      // rack is isolating on it; while the pod is still Starting (nothing read yet) only a leak's
      // isolation raises it: an operator's isolation restored at the start is proven on its own
      // deadline (isolation-failed), which the start does not hold back
      const latched = state === L.RACK_ISOLATING || state === L.RACK_ESCALATED;
      const relied = latched || manual || this.noCoolant.coolantPending[r];
      a.update(`flow-meter:${rack.name}`, !x.flowLpm.good && (!starting || latched), {
        severity: relied ? "Critical" : "Warning",
        source: rack.name,
        message: `flow meter at ${rack.name} has no good reading (${x.flowLpm.why ?? "unknown"}): a leak isolation there cannot be proven, and a loss of flow cannot be seen${this.noCoolant.coolantPending[r] ? "; the rack's power waits at its no-coolant limit until its flow is seen" : ""}`,
      });

      // over-temperature tiers with hysteresis
      const t = x.returnTempC;
      const o = s.overTemp;
      let tier = this.overTier[r];
      if (t.good) {
        const want = t.value >= o.criticalC ? 2 : t.value >= o.warningC ? 1 : 0;
        if (want > tier) tier = want;
        else if (tier === 2 && t.value < o.criticalC - o.hysteresisC) tier = t.value >= o.warningC ? 1 : 0;
        else if (tier === 1 && t.value < o.warningC - o.hysteresisC) tier = 0;
      }
      this.overTier[r] = tier;
      // inside the hysteresis band the alarm holds with the reading already below its threshold:
      // say so (it read "49.0 °C above 50 °C", issue #53)
      const limitC = tier === 2 ? o.criticalC : o.warningC;
      a.update(`overtemp:${rack.name}`, tier > 0, {
        severity: tier === 2 ? "Critical" : "Warning",
        source: rack.name,
        message: !t.good
          ? `${rack.name} return temperature above ${limitC} °C when last read; no good reading now`
          : t.value >= limitC
            ? `${rack.name} return temperature ${t.value.toFixed(1)} °C, above ${limitC} °C`
            : `${rack.name} return temperature ${t.value.toFixed(1)} °C, back under ${limitC} °C; the alarm clears under ${limitC - o.hysteresisC} °C`,
      });

      // coolant and power together: power that did not follow, power that waits for the coolant,
      // and cap mode's thermal backstop
      const coupling = this.noCoolant.update(r, rack, x, s, a, now);
      decisions.coolantPending[r] = coupling.coolantPending;
      if (coupling.powerOff) decisions.rackPowerOff[r] = true;

      // loss of flow while in service
      const inService = state === L.RACK_NORMAL && !x.manualIsolate;
      // the deadband: once the alarm is up, it holds until the flow is deadbandLpm above the threshold
      const lowBelow = s.lossOfFlow.minLpm + (this.alarms.get(`flow:${rack.name}`)?.conditionActive === true ? s.lossOfFlow.deadbandLpm : 0);
      const low = inService && x.flowLpm.good && x.flowLpm.value < lowBelow;
      this.lowFlowSince[r] = low ? (this.lowFlowSince[r] ?? now) : null;
      a.update(`flow:${rack.name}`, low && now - (this.lowFlowSince[r] ?? now) >= s.lossOfFlow.delayMs, {
        severity: "Critical",
        source: rack.name,
        message: `loss of flow at ${rack.name}: ${x.flowLpm.value.toFixed(1)} L/min with the rack in service`,
      });
    });

    // ---- heat balance ----------------------------------------------------------------------
    // without a good CDU supply reading (or a CDU supply sensor at all) the check still runs:
    // only its first clue, the rack's supply against the CDU's, is lost (NaN compares false)
    if (s.heatBalance.enabled) {
      const usable = i.racks.map((x) => x.returnTempC.good && x.supplyTempC.good && x.flowLpm.good && x.powerKw.good);
      const results = heatBalance(
        i.racks.map((x, r) => ({
          powerKw: x.powerKw.value,
          flowLpm: x.flowLpm.value,
          supplyTempC: x.supplyTempC.value,
          returnTempC: x.returnTempC.value,
          valvePct: i.loopOut[r] ?? 0,
          inService: usable[r] && (i.rackState[r] ?? 0) === L.RACK_NORMAL && !x.manualIsolate,
        })),
        i.cduSupplyTempC.good ? i.cduSupplyTempC.value : NaN,
        s.heatBalance,
      );
      results.forEach((res, r) => {
        const name = c.racks[r].name;
        // the balance holds only in a steady state: a rack warming up stores heat that its coolant
        // does not carry (the demo's rack-3 raised it 30 s after each start, its return rising
        // 36.5 -> 43.8 °C), so a return temperature that moves more than steadyC restarts the dwell
        const t = i.racks[r].returnTempC.value;
        const since = this.heatSince[r];
        this.heatSince[r] = !res.disagrees ? null : since === null || Math.abs(t - since.returnC) > s.heatBalance.steadyC ? { ms: now, returnC: t } : since;
        a.update(`heat-balance:${name}`, res.disagrees && now - (this.heatSince[r]?.ms ?? now) >= s.heatBalance.dwellMs, {
          severity: "Warning",
          source: name,
          message: `${name}: flow × ΔT carries ${res.carriedKw.toFixed(1)} kW but the power meter reads ${i.racks[r].powerKw.value.toFixed(1)} kW; suspect sensor: ${res.suspect ?? "?"}${res.missing !== undefined && res.missing.length > 0 ? ` (found without a clue: ${res.missing.join("; ")})` : ""}`,
        });
      });
    }

    // ---- pumps: lead/lag duty -------------------------------------------------------------------
    decisions.pumpRun = this.pumpDuty?.pass({ nowMs: now, wallMs: i.wallMs ?? now, enabled: decisions.pumpEnable, speedPct: i.loopOut[this.layout.pumpLoop] ?? NaN, pumps: i.pumps ?? [] }, a, this.emit, starting).slice() ?? [true];
    decisions.pumpLead = this.pumpDuty?.lead ?? 0;

    // ---- power budget, bounded by the coolant -------------------------------------------------
    decisions.powerCapsKw = this.power.evaluate(i, this.pod, s, this.powerBudgetKw, a, now, starting);

    // ---- mode ------------------------------------------------------------------------------
    // every alarm still listed counts, including one whose condition went and which waits out its
    // clear dwell: Running means no alarm at all, as the docs and the alarm list say
    const problems = a.active();
    if (!i.controlHealthy && (this.everRunning || now - this.startedAtMs > 10_000)) this.setMode("Failsafe", "control loop unhealthy");
    else if (this.mode_ === "Starting" && !allLive && now - this.startedAtMs < 30_000) this.setMode("Starting", "waiting for valid inputs");
    else if (anyFailsafe || problems.length > 0) this.setMode("Degraded", problems.map((p) => p.id).join(", ") || "loop in fail-safe");
    else this.setMode("Running", "all loops in control, no alarms");
    if (this.mode_ === "Running" || this.mode_ === "Degraded") this.everRunning = true;
    return decisions;
  }
}

/**
 * A rack's leak sensor fault in words that say which: not read (a comms fault: an unplugged
 * rack read as a leak warning, issue #50), read and unusable, or a cable fault the sensor reports.
 */
export function leakSensorWords(rack: string, leaks: readonly Reading[]): string {
  const unread = leaks.filter((l) => !l.good);
  const which = `(${unread.map((l) => l.why ?? "no reading").join("; ")})`;
  if (unread.some((l) => l.comms === true)) return `leak sensor at ${rack} not read, a comms fault ${which}: leak detection impaired`;
  if (leaks.some((l) => l.value === L.LEAK_CABLE_FAULT)) return `leak sensor cable fault at ${rack}: leak detection impaired`;
  if (unread.length > 0) return `leak sensor at ${rack} has no valid reading ${which}: leak detection impaired`;
  return `leak sensor fault at ${rack}: leak detection impaired`;
}
