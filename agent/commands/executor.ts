// Carries out an authorised command on the agent, after checking it against the configured
// envelope. Every path here goes through the same agent operations the local tools use, and
// none of them reaches past the hot path's interlock priority: leak isolation and fail-safe
// outrank any mode, setpoint or output a command sets.
import { forceBy } from "../operator/loop-leases.js";
import type { IsoValve } from "../health/isolation-stroke.js";
import type { LoopMode } from "../../hotpath-as/bank-config.js";
import type { PodConfig } from "../../pod/config.js";
import type { SupervisorConfig } from "../supervisor/schema.js";
import { loopEnvelope, type CommandLimits, type CommandRequest, type Outcome, type PodCommander, type RackLoad, type Range } from "../pod-api.js";

export type { CommandLimits, Outcome, Range };

/** The envelope commands must stay inside, from the config (the same limits local tuning obeys). */
export function commandLimits(c: Pick<PodConfig, "control" | "racks"> & { supervisor: Pick<SupervisorConfig, "powerBudget"> }): CommandLimits {
  const k = c.control;
  return {
    returnTempC: { min: k.returnTempSetpointMinC, max: k.returnTempSetpointMaxC },
    dpKpa: { min: k.dpSetpointMinKpa, max: k.dpSetpointMaxKpa },
    // mission control may lower the pod budget, down to the racks' minimums, never raise it
    // above the configured (electrical) budget
    powerBudgetKw: { min: c.racks.reduce((a, r) => a + r.minPowerKw, 0), max: c.supervisor.powerBudget.podKw },
    maxLeaseS: Math.floor(k.setpointLeaseMaxMs / 1000),
    rackOutputPct: { min: k.rackLoop.outMin, max: k.rackLoop.outMax },
    pumpOutputPct: { min: k.pumpLoop.outMin, max: k.pumpLoop.outMax },
    supplyTempC: { min: k.supplyTempSetpointMinC, max: k.supplyTempSetpointMaxC },
    supplyOutputPct: { min: k.supplyLoop.outMin, max: k.supplyLoop.outMax },
  };
}

const outside = (what: string, v: number, r: Range): Outcome => ({ status: "rejected", code: "out-of-envelope", reason: `${what} ${v} is outside the configured envelope [${r.min}, ${r.max}]` });
const inRange = (v: number, r: Range): boolean => v >= r.min && v <= r.max;
const longLease = (leaseS: number, maxS: number): Outcome | null =>
  leaseS > maxS ? { status: "rejected", code: "out-of-envelope", reason: `lease ${leaseS} s exceeds the configured maximum ${maxS} s` } : null;

/**
 * Why an operator may not isolate a rack now, or null. Isolation cuts the rack's coolant, and the
 * pod wiring cuts its power with it (racks[].noCoolant); a rack still carrying its load would be
 * powered off or capped under that load, its work lost, or left to heat with no coolant. So an
 * operator's isolation is for a rack whose load has been moved off first, shown by its own power
 * meter; a leak never waits for this (the hot path isolates on its own). A rack already isolated
 * by an operator may be asked again.
 */
export function loadedRackRefusal(name: string, load: RackLoad): string | null {
  if (load.isolatedByOperator) return null;
  if (load.drawKw === null) return `${name}'s power meter has no good reading (${load.why ?? "unknown"}): its load cannot be shown to be off, and isolating it would cut the coolant from whatever it still draws`;
  if (load.drawKw > load.limitKw) return `${name} draws ${load.drawKw.toFixed(1)} kW, above the ${load.limitKw} kW it may draw with no coolant: move its load off first (isolation would cut its coolant and its power under that load)`;
  return null;
}

/** Carries out `body` (its command and parameters, already checked against the command's schema) as `by`. */
export async function executeCommand(agent: PodCommander, body: CommandRequest, by: string): Promise<Outcome> {
  const p = body.params;
  const limits = agent.limits;
  const rackOf = (): number | Outcome => agent.layout.rackIndex(String(p.rack)) ?? { status: "rejected", code: "not-found", reason: `no rack "${String(p.rack)}"` };
  const loopOf = (): number | Outcome => agent.layout.loopIndex(String(p.loop)) ?? { status: "rejected", code: "not-found", reason: `no loop "${String(p.loop)}"` };
  const envelopeOf = (loop: number): ReturnType<typeof loopEnvelope> => loopEnvelope(limits, agent.layout.loopKind(loop));

  switch (body.command) {
    case "config":
      // a pushed config is the daemon's to take (agent/config-push/), through the uplink alone
      return { status: "rejected", code: "refused", reason: "a config is pushed through the uplink to a daemon (podwarden fleet config push), not from here" };

    case "snapshot":
      return { status: "ok", data: agent.snapshot() };

    case "setpoint": {
      const loop = loopOf();
      if (typeof loop !== "number") return loop;
      const value = p.value as number;
      const env = envelopeOf(loop);
      if (!inRange(value, env.setpoint)) return outside(env.setpointWords, value, env.setpoint);
      const leaseS = p.leaseS as number;
      const tooLong = longLease(leaseS, limits.maxLeaseS);
      if (tooLong !== null) return tooLong;
      await agent.setSetpoint(loop, value, leaseS * 1000, by);
      return { status: "ok", data: { loop: p.loop, value, leaseS } };
    }

    case "mode": {
      const loopKeys = ["loop", "mode", "outputPct", "leaseS"].filter((k) => p[k] !== undefined);
      if (typeof p.maintenance === "boolean") {
        if (loopKeys.length > 0) return { status: "rejected", code: "invalid-params", reason: `maintenance goes alone, not with ${loopKeys.join(", ")}` };
        await agent.setMaintenance(p.maintenance);
        return { status: "ok", data: { maintenance: p.maintenance } };
      }
      if (p.loop === undefined || p.mode === undefined) return { status: "rejected", code: "invalid-params", reason: "give {loop, mode[, outputPct][, leaseS]} or {maintenance}" };
      const loop = loopOf();
      if (typeof loop !== "number") return loop;
      const mode = p.mode as LoopMode;
      const envelope = envelopeOf(loop).output;
      const out = p.outputPct as number | undefined;
      const leaseS = p.leaseS as number | undefined;
      if (mode === "Manual" || mode === "Override") {
        if (out === undefined) return { status: "rejected", code: "invalid-params", reason: `${mode} needs outputPct` };
        if (!inRange(out, envelope)) return outside("outputPct", out, envelope);
      } else if (out !== undefined) {
        return { status: "rejected", code: "invalid-params", reason: `outputPct is only for Manual or Override, not ${mode}` };
      }
      // Override is a remote value: it holds only for its lease. Manual is the persistent one.
      if (mode === "Override") {
        if (leaseS === undefined) return { status: "rejected", code: "invalid-params", reason: "Override needs leaseS: it holds only for its lease (Manual is the mode that stays)" };
        const tooLong = longLease(leaseS, limits.maxLeaseS);
        if (tooLong !== null) return tooLong;
        await agent.overrideLoop(loop, out as number, leaseS * 1000, by);
        return { status: "ok", data: { loop: p.loop, mode, outputPct: out, leaseS } };
      }
      if (leaseS !== undefined) return { status: "rejected", code: "invalid-params", reason: `leaseS is only for Override, not ${mode}: ${mode} stays until changed` };
      await agent.setLoopMode(loop, mode, out);
      return { status: "ok", data: { loop: p.loop, mode, outputPct: out } };
    }

    case "ack-alarm": {
      const id = String(p.id);
      if (!agent.acknowledgeAlarm(id, by)) return { status: "rejected", code: "not-found", reason: `no active alarm "${id}"` };
      return { status: "ok", data: { id } };
    }

    case "isolate-rack":
    case "return-rack": {
      const rack = rackOf();
      if (typeof rack !== "number") return rack;
      // a rack latched for a leak stays isolated whatever an operator asks: say so, and change nothing
      if (body.command === "return-rack" && agent.leakLatched(rack)) {
        return { status: "rejected", code: "refused", rack: String(p.rack), reason: `${String(p.rack)} is latched for a leak: it stays isolated until an authorised reset-leak` };
      }
      if (body.command === "isolate-rack") {
        const refusal = loadedRackRefusal(String(p.rack), agent.rackLoad(rack));
        if (refusal !== null) return { status: "rejected", code: "refused", rack: String(p.rack), reason: refusal };
      }
      await agent.isolateRack(rack, body.command === "isolate-rack");
      return { status: "ok", rack: String(p.rack), data: { rack: p.rack, isolated: body.command === "isolate-rack" } };
    }

    case "reset-leak": {
      const rack = rackOf();
      if (typeof rack !== "number") return rack;
      const result = await agent.resetLeak(rack);
      if (result === "accepted") return { status: "ok", rack: String(p.rack), data: { rack: p.rack, result } };
      return { status: "rejected", code: "refused", rack: String(p.rack), reason: result === "refused-wet" ? "a leak sensor is still wet: the latch stays" : "the control loop did not confirm the reset" };
    }

    case "power-budget": {
      const kw = p.podKw as number;
      if (!inRange(kw, limits.powerBudgetKw)) return outside("pod power budget (kW)", kw, limits.powerBudgetKw);
      await agent.setPowerBudget(kw);
      return { status: "ok", data: { podKw: kw } };
    }

    case "tune": {
      const loop = loopOf();
      if (typeof loop !== "number") return loop;
      const name = String(p.loop);
      if (p.action === "status") return { status: "ok", data: { tuning: agent.tuningStatus(loop) } };
      if (p.action === "abort") {
        const s = agent.abortTuning(loop, by);
        return s === null ? { status: "rejected", code: "not-found", reason: `no tuning runs on ${name}` } : { status: "ok", data: { tuning: s } };
      }
      try {
        return { status: "ok", data: { tuning: agent.startTuning(loop, by) } };
      } catch (err) {
        return { status: "rejected", code: "refused", reason: (err as Error).message };
      }
    }

    case "gains": {
      const loop = loopOf();
      if (typeof loop !== "number") return loop;
      const given = ["rule", "kp", "ki", "kd", "revert"].filter((k) => p[k] !== undefined);
      if (given.length === 0) return { status: "ok", data: agent.loopGains(loop) };
      if (p.revert === true) {
        if (given.length > 1) return { status: "rejected", code: "invalid-params", reason: "revert goes alone" };
        const had = await agent.revertGains(loop, by);
        return had ? { status: "ok", data: agent.loopGains(loop) } : { status: "rejected", code: "not-found", reason: `${String(p.loop)} already runs on the config's gains` };
      }
      let gains: { rule: string } | { kp: number; ki: number; kd: number };
      if (p.rule !== undefined) {
        if (given.length > 1) return { status: "rejected", code: "invalid-params", reason: "rule goes alone: the gains are its proposal's" };
        gains = { rule: p.rule as string };
      } else {
        if (p.kp === undefined || p.ki === undefined) return { status: "rejected", code: "invalid-params", reason: "give rule, or kp and ki (and kd), or revert" };
        gains = { kp: p.kp as number, ki: p.ki as number, kd: (p.kd as number | undefined) ?? 0 };
      }
      try {
        return { status: "ok", data: { applied: await agent.applyGains(loop, gains, by) } };
      } catch (err) {
        return { status: "rejected", code: "refused", reason: (err as Error).message };
      }
    }

    case "stroke": {
      if (p.action !== "start") {
        if (p.rack !== undefined || p.valve !== undefined) return { status: "rejected", code: "invalid-params", reason: `${String(p.action)} takes no rack or valve: one test runs at a time` };
        if (p.action === "status") return { status: "ok", data: { stroke: agent.strokeStatus() } };
        const s = agent.abortStroke(by);
        return s === null ? { status: "rejected", code: "not-found", reason: "no partial-stroke test runs" } : { status: "ok", data: { stroke: s } };
      }
      if (p.rack === undefined || p.valve === undefined) return { status: "rejected", code: "invalid-params", reason: "start needs rack and valve (supply or return)" };
      const rack = rackOf();
      if (typeof rack !== "number") return rack;
      const rackName = p.rack as string; // a name, by the schema
      try {
        return { status: "ok", rack: rackName, data: { stroke: agent.startStroke(rack, p.valve as IsoValve, by) } };
      } catch (err) {
        return { status: "rejected", code: "refused", rack: rackName, reason: (err as Error).message };
      }
    }

    case "force": {
      const output = String(p.output);
      const target = agent.forceTarget(output);
      if (target === null) return { status: "rejected", code: "not-found", reason: `the pod drives no output "${output}"` };
      if (target.kind === "isolation") {
        const rack = agent.layout.racks[target.rack].name;
        if (agent.leakLatched(target.rack)) return { status: "rejected", code: "refused", rack, reason: `${rack} is latched for a leak: its isolation valves stay shut until an authorised reset-leak` };
        return { status: "rejected", code: "refused", rack, reason: `${target.what} is the leak path's: isolate-rack and return-rack move it (with the rack's load off), and a partial-stroke test (stroke) checks it` };
      }
      if (target.kind === "refused") return { status: "rejected", code: "refused", reason: `${target.what} cannot be forced: ${target.why}` };
      const loopName = agent.layout.loopName(target.loop);
      if (p.release === true) {
        if (p.value !== undefined || p.leaseS !== undefined) return { status: "rejected", code: "invalid-params", reason: "release goes alone" };
        if (!(await agent.endOverride(target.loop))) return { status: "rejected", code: "not-found", reason: `${output} is not forced (${loopName} has no Override)` };
        return { status: "ok", data: { output, loop: loopName, released: true } };
      }
      if (p.value === undefined || p.leaseS === undefined) return { status: "rejected", code: "invalid-params", reason: "give value and leaseS, or release" };
      // the value and lease first, whatever the mode: an engineer learns a force is wrong before
      // taking the pod into maintenance for it
      const value = p.value as number;
      const envelope = envelopeOf(target.loop).output;
      if (!inRange(value, envelope)) return outside(`${output}`, value, envelope);
      const leaseS = p.leaseS as number;
      const tooLong = longLease(leaseS, limits.maxLeaseS);
      if (tooLong !== null) return tooLong;
      // a loop check is commissioning work: the pod says so to everyone watching it first
      if (!agent.maintenance()) return { status: "rejected", code: "refused", reason: `a force is a loop check: put the pod in maintenance first (${output} not moved)` };
      await agent.overrideLoop(target.loop, value, leaseS * 1000, forceBy(by, output));
      return { status: "ok", data: { output, loop: loopName, value, leaseS, what: target.what } };
    }

    case "record": {
      // a recording of the window around now: moves nothing, and fetching it is local
      // (`podwarden recording export`), so only its id and the recent ones' summaries come back
      try {
        const id = agent.recordNow(by);
        return { status: "ok", data: { recording: id, recent: agent.recentRecordings(5) } };
      } catch (err) {
        return { status: "rejected", code: "refused", reason: (err as Error).message };
      }
    }
  }
}
