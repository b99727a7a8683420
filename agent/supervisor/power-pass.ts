// The supervisor's power pass: each rack's demand and coolant limit, the allocation of the pod
// budget (power-budget.ts), and its two alarms, power:budget and power:coolant, each raised after
// a spell of its condition and held after it (HeldCondition), so that racks whose draw moves
// about their share do not make them chatter.
import type { CduConfig, RackConfig } from "../../pod/config.js";
import type { AlarmManager } from "./alarms.js";
import { coolantLimitKw, limitSupplyC } from "./coolant-limit.js";
import { allocatePower } from "./power-budget.js";
import type { SupervisorConfig } from "./schema.js";
import type { Reading } from "./reading.js";

/**
 * A condition that is raised once it has held afterMs without a break, and stays raised until
 * holdMs have passed since it last held: an on-delay and an off-delay.
 */
export class HeldCondition {
  private since: number | null = null;
  private lastAtMs = -Infinity;
  private on = false;

  update(active: boolean, now: number, afterMs: number, holdMs: number): boolean {
    if (active) {
      this.since ??= now;
      this.lastAtMs = now;
    } else this.since = null;
    this.on = this.on ? active || now - this.lastAtMs < holdMs : this.since !== null && now - this.since >= afterMs;
    return this.on;
  }
}

export interface PowerPassInputs {
  racks: readonly { powerKw: Reading; supplyTempC: Reading }[];
  cduSupplyTempC: Reading;
}

export class PowerPass {
  private lastCaps: number[];
  private readonly budget = new HeldCondition();
  private readonly coolant = new HeldCondition();

  constructor(racks: readonly RackConfig[]) {
    this.lastCaps = racks.map((r) => r.ratedKw);
  }

  /** The caps of the last pass (each rack's rating before the first). */
  get caps(): number[] {
    return this.lastCaps;
  }

  /**
   * One pass: the caps in force until the next, and the alarms' state. While `starting`, the
   * caps are computed as ever but the alarms wait: a rack whose power is not read yet counts at
   * its rating, which constrains the budget for a moment at every start.
   */
  evaluate(i: PowerPassInputs, pod: { racks: readonly RackConfig[]; cdu: CduConfig }, s: SupervisorConfig, budgetKw: number, a: AlarmManager, now: number, starting = false): number[] {
    const pb = s.powerBudget;
    const limits = pod.racks.map((rack, r) => {
      if (rack.maxFlowLpm === undefined) return null;
      const { supplyC, known } = limitSupplyC(i.racks[r].supplyTempC, i.cduSupplyTempC, pb.coolant.unknownSupplyC);
      return { kw: coolantLimitKw(rack.maxFlowLpm, supplyC, pb.coolant.returnLimitC), supplyC, known };
    });
    const demands = pod.racks.map((rack, r) => {
      const p = i.racks[r].powerKw;
      const cap = this.lastCaps[r];
      // a rack drawing at its cap may want more than it can show: ask for headroom above the cap
      const draw = p.good ? p.value : rack.ratedKw;
      const demand = draw >= 0.95 * cap ? cap * (1 + pb.headroomPct / 100) : draw * (1 + pb.headroomPct / 100);
      return { name: rack.name, priority: rack.priority, minKw: rack.minPowerKw, maxKw: rack.ratedKw, demandKw: demand, coolantKw: limits[r]?.kw };
    });
    const heatKw = pod.cdu.ratedHeatKw ?? Infinity;
    const alloc = allocatePower(budgetKw, demands, heatKw);
    this.lastCaps = alloc.caps;

    const limit = alloc.heatBound ? `the CDU's rated heat rejection ${heatKw} kW` : `pod power budget ${budgetKw} kW`;
    a.update("power:budget", this.budget.update(alloc.constrained && !starting, now, pb.alarmAfterMs, pb.alarmHoldMs), {
      severity: "Warning",
      source: "pod",
      message: alloc.constrained ? `${limit} constrains rack caps` : `the pod's budget or heat rejection constrained rack caps within the last ${Math.round(pb.alarmHoldMs / 1000)} s`,
    });

    const bound = pod.racks.flatMap((rack, r) => {
      const l = limits[r];
      if (!alloc.coolantBound[r] || l === null) return [];
      return [`${rack.name} at ${l.kw.toFixed(1)} kW (supply ${l.known ? `${l.supplyC.toFixed(1)} °C` : `unknown, taken as ${l.supplyC} °C`})`];
    });
    a.update("power:coolant", this.coolant.update(bound.length > 0 && !starting, now, pb.alarmAfterMs, pb.alarmHoldMs), {
      severity: "Warning",
      source: "pod",
      message:
        bound.length > 0
          ? `the coolant binds rack caps below their demand: ${bound.join(", ")}; return limit ${pb.coolant.returnLimitC} °C`
          : `the coolant bound rack caps within the last ${Math.round(pb.alarmHoldMs / 1000)} s`,
    });
    return alloc.caps;
  }
}
