// What every actuator of the pod does in each fault class, as the config declares it: the one
// place the hot path's bank (leak, bad input), the shutdown writes, the devices' lease fail
// positions and the generated table in docs/safety.md all read it from.
//
// Defaults come by kind (control.rackLoop, control.pumpLoop, control.isolation); a rack may
// override its own (racks[].failSafe).
import type { SafeAction } from "../hotpath-as/bank-config.js";
import type { ControlConfig, PodConfig, RackConfig } from "./config.js";
import { cduPumps } from "./pumps.js";

export const FAULT_CLASSES = ["leak", "badInput", "commsLoss", "shutdown", "agentDeath"] as const;
export type FaultClass = (typeof FAULT_CLASSES)[number];

/** A rack's fail-safe settings in force: its own where it has them, else its kind's. */
export interface RackFailSafe {
  safeOnLeak: SafeAction;
  safeOnSensorFault: SafeAction;
  safeOnShutdown: SafeAction;
  safeOnLeaseLoss: SafeAction;
  isolationOnLeaseLoss: "hold" | "open";
}

export function rackFailSafe(control: Pick<ControlConfig, "rackLoop" | "isolation">, rack: Pick<RackConfig, "failSafe">): RackFailSafe {
  const k = control.rackLoop;
  const own = rack.failSafe ?? {};
  return {
    safeOnLeak: own.safeOnLeak ?? k.safeOnLeak,
    safeOnSensorFault: own.safeOnSensorFault ?? k.safeOnSensorFault,
    safeOnShutdown: own.safeOnShutdown ?? k.safeOnShutdown,
    safeOnLeaseLoss: own.safeOnLeaseLoss ?? k.safeOnLeaseLoss,
    isolationOnLeaseLoss: own.isolationOnLeaseLoss ?? control.isolation.onLeaseLoss,
  };
}

/** The output a safe action gives, `current` being the output in force (NaN: none known). */
export function safeValue(a: SafeAction, outMin: number, outMax: number, current: number): number {
  if (a === "open") return outMax;
  if (a === "closed") return outMin;
  if (a === "hold") return Number.isFinite(current) ? current : outMax;
  return Math.min(Math.max(a.fixed, outMin), outMax);
}

/**
 * The fail positions podwarden writes to the devices that take them: what each device does on
 * its own when its heartbeat lease expires. A device with no such output keeps its own setting,
 * which the config declares and docs/safety.md lists.
 */
export function leaseFailWrites(c: PodConfig): { id: string; value: number }[] {
  const out: { id: string; value: number }[] = [];
  for (const r of c.racks) {
    const fs = rackFailSafe(c.control, r);
    const k = c.control.rackLoop;
    if (r.outputs.failValve !== undefined) out.push({ id: r.outputs.failValve, value: safeValue(fs.safeOnLeaseLoss, k.outMin, k.outMax, NaN) });
    if (r.outputs.failIsolationOpen !== undefined) out.push({ id: r.outputs.failIsolationOpen, value: fs.isolationOnLeaseLoss === "open" ? 1 : 0 });
  }
  const p = c.control.pumpLoop;
  for (const pump of cduPumps(c.cdu)) if (pump.failSpeed !== undefined) out.push({ id: pump.failSpeed, value: safeValue(p.safeOnLeaseLoss, p.outMin, p.outMax, NaN) });
  const s = c.control.supplyLoop;
  const failValve = c.cdu.supplyControl?.failValve;
  if (failValve !== undefined) out.push({ id: failValve, value: safeValue(s.safeOnLeaseLoss, s.outMin, s.outMax, NaN) });
  return out;
}

/** Problems a schema cannot state: a fail position a device register cannot hold. */
export function failSafeProblems(c: PodConfig): string[] {
  const out: string[] = [];
  c.racks.forEach((r, i) => {
    const fs = rackFailSafe(c.control, r);
    if (r.outputs.failValve !== undefined && fs.safeOnLeaseLoss === "hold") {
      out.push(`racks[${i}].failSafe.safeOnLeaseLoss: "hold" cannot be written to outputs.failValve (a position, in %); give open, closed or {fixed}, or drop failValve to declare the device's own hold`);
    }
    const own = r.failSafe ?? {};
    const k = c.control.rackLoop;
    for (const [key, a] of Object.entries(own)) {
      if (typeof a === "object" && (a.fixed < k.outMin || a.fixed > k.outMax)) out.push(`racks[${i}].failSafe.${key}.fixed: must be within control.rackLoop [outMin, outMax]`);
    }
  });
  if (cduPumps(c.cdu).some((p) => p.failSpeed !== undefined) && c.control.pumpLoop.safeOnLeaseLoss === "hold") {
    out.push(`control.pumpLoop.safeOnLeaseLoss: "hold" cannot be written to a pump's fail speed output (cdu.outputs.failPumpSpeed, cdu.pumps[].outputs.failSpeed: a speed, in %); give open, closed or {fixed}`);
  }
  if (c.cdu.supplyControl?.failValve !== undefined && c.control.supplyLoop.safeOnLeaseLoss === "hold") {
    out.push(`control.supplyLoop.safeOnLeaseLoss: "hold" cannot be written to cdu.supplyControl.failValve (a position, in %); give open, closed or {fixed}`);
  }
  return out;
}

function words(a: SafeAction, lo: number, hi: number): string {
  if (a === "open") return `open (${hi} %)`;
  if (a === "closed") return `closed (${lo} %)`;
  if (a === "hold") return "hold its last output";
  return `${safeValue(a, lo, hi, NaN)} %`;
}

const byDevice = (written: string | undefined, what: string): string => (written === undefined ? `${what} (declared: the device's own setting)` : `${what} (written to \`${written}\`)`);

/** One actuator's behaviour per fault class, in words. */
export interface FailSafeRow {
  actuator: string;
  outputs: string[];
  behaviour: Record<FaultClass, string>;
}

/**
 * Every actuator, every fault class. "commsLoss" is the loss of the actuator's own device: the
 * agent cannot reach it, so the device acts on its own when its lease expires, as it does when
 * the agent dies ("agentDeath"); a lost input device is "badInput" for the loops that read it.
 */
/** What an unproven leak isolation escalates to (supervisor.escalation). */
export interface Escalation {
  rackPowerOff: boolean;
  pumpStop: boolean;
}

export function failSafeMatrix(c: PodConfig, escalation: Escalation): FailSafeRow[] {
  const rows: FailSafeRow[] = [];
  const k = c.control.rackLoop;
  const leakFault = c.control.isolation.leakSensorFault;
  for (const r of c.racks) {
    const fs = rackFailSafe(c.control, r);
    const lease = byDevice(r.outputs.failValve, words(fs.safeOnLeaseLoss, k.outMin, k.outMax));
    rows.push({
      actuator: `${r.name} control valve`,
      outputs: [r.outputs.valve],
      behaviour: {
        leak: words(fs.safeOnLeak, k.outMin, k.outMax),
        badInput: `${words(fs.safeOnSensorFault, k.outMin, k.outMax)} while its return temperature${k.kff !== 0 ? " or power" : ""} reading is bad`,
        commsLoss: lease,
        shutdown: words(fs.safeOnShutdown, k.outMin, k.outMax),
        agentDeath: lease,
      },
    });
    const isoLease = byDevice(r.outputs.failIsolationOpen, fs.isolationOnLeaseLoss === "open" ? "open" : "hold (an isolated rack stays isolated)");
    rows.push({
      actuator: `${r.name} isolation valves`,
      outputs: [r.outputs.supplyIsolation, r.outputs.returnIsolation],
      behaviour: {
        leak: `closed, latched until an authorised reset; the isolation proven by flow${r.points.supplyIsolationClosedLimit !== undefined || r.points.returnIsolationClosedLimit !== undefined ? " and its closed limit switches" : " alone (no closed limit switch configured)"}`,
        badInput: leakFault === "isolate" ? "closed while a leak sensor is faulty (control.isolation.leakSensorFault: isolate)" : "unchanged (a faulty leak sensor raises `leak-sensor:<rack>`; the rack stays in service)",
        commsLoss: isoLease,
        shutdown: "unchanged (an isolated rack stays isolated; the latch is saved)",
        agentDeath: isoLease,
      },
    });
    const power = [r.outputs.powerOff, r.outputs.powerCap].filter((x): x is string => x !== undefined);
    if (power.length > 0) {
      const noCoolant = r.noCoolant.action === "power-off" ? "power-off requested" : `capped at ${r.noCoolant.capKw} kW`;
      rows.push({
        actuator: `${r.name} power`,
        outputs: power,
        behaviour: {
          leak: `${noCoolant} with the isolation (coolant and power together)${escalation.rackPowerOff && r.outputs.powerOff !== undefined ? "; power-off requested on an unproven isolation" : ""}`,
          badInput: "a bad power reading counts as the rack's rated power in the budget (never as low)",
          commsLoss: "the device's own (not configured here)",
          shutdown: "unchanged (the last command stays with the device)",
          agentDeath: "the device's own (not configured here)",
        },
      });
    }
  }
  const p = c.control.pumpLoop;
  const duty = c.cdu.pumps !== undefined;
  for (const pump of cduPumps(c.cdu)) {
    // a pump in duty with no fail-speed output: its drive's own setting, which the pump loop's
    // one safeOnLeaseLoss cannot declare for each (a standby's drive may hold it stopped)
    const pumpLease = duty && pump.failSpeed === undefined ? "the device's own (not configured here)" : byDevice(pump.failSpeed, words(p.safeOnLeaseLoss, p.outMin, p.outMax));
    const label = duty ? `CDU ${pump.name}` : "CDU pump";
    rows.push({
      actuator: `${label} speed`,
      outputs: [pump.speed],
      behaviour: {
        leak: "keeps regulating differential pressure (it serves every rack; it has no leak value of its own)",
        badInput: `${words(p.safeOnSensorFault, p.outMin, p.outMax)} while its differential-pressure reading is bad${duty ? "; a bad status input of the lead is not a failure: it keeps the lead" : ""}`,
        commsLoss: pumpLease,
        shutdown: duty ? `${words(p.safeOnShutdown, p.outMin, p.outMax)} if it runs; 0 if it stands by` : words(p.safeOnShutdown, p.outMin, p.outMax),
        agentDeath: pumpLease,
      },
    });
    if (pump.enable !== undefined) {
      rows.push({
        actuator: `${label} enable`,
        outputs: [pump.enable],
        behaviour: {
          leak: escalation.pumpStop ? "stopped on an unproven isolation (supervisor.escalation.pumpStop)" : "unchanged (supervisor.escalation.pumpStop is off)",
          badInput: "unchanged",
          commsLoss: "the device's own (not configured here)",
          shutdown: "unchanged",
          agentDeath: "the device's own (not configured here)",
        },
      });
    }
  }
  const supply = c.cdu.supplyControl;
  if (supply !== undefined) {
    const t = c.control.supplyLoop;
    const lease = byDevice(supply.failValve, words(t.safeOnLeaseLoss, t.outMin, t.outMax));
    rows.push({
      actuator: "CDU primary valve",
      outputs: [supply.valve],
      behaviour: {
        leak: "keeps regulating the supply temperature (it serves every rack; it has no leak value of its own)",
        badInput: `${words(t.safeOnSensorFault, t.outMin, t.outMax)} while its supply-temperature reading is bad`,
        commsLoss: lease,
        shutdown: words(t.safeOnShutdown, t.outMin, t.outMax),
        agentDeath: lease,
      },
    });
  }
  return rows;
}

const HEADINGS: Record<FaultClass, string> = {
  leak: "leak (the rack isolated)",
  badInput: "bad input",
  commsLoss: "comms loss (its own device)",
  shutdown: "agent shutdown (SIGTERM)",
  agentDeath: "agent death (lease expiry)",
};

/** The matrix as a markdown table. */
export function failSafeTable(c: PodConfig, escalation: Escalation): string {
  const lines = [`| actuator | ${FAULT_CLASSES.map((f) => HEADINGS[f]).join(" | ")} |`, `|---|${FAULT_CLASSES.map(() => "---").join("|")}|`];
  for (const row of failSafeMatrix(c, escalation)) lines.push(`| ${row.actuator} (${row.outputs.map((o) => `\`${o}\``).join(", ")}) | ${FAULT_CLASSES.map((f) => row.behaviour[f]).join(" | ")} |`);
  return lines.join("\n");
}
