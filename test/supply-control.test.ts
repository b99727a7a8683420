// Supply-temperature control through the exchanger's primary-side valve (issue 53, item 8):
// cdu.supplyControl and control.supplyLoop, end to end in the simulator in virtual time, and
// the loop's place in the layout, the bank, the envelope and the fail-safe matrix.
import { describe, expect, it } from "vitest";
import { commandLimits, executeCommand } from "../agent/commands/executor.js";
import { loopEnvelope, type PodCommander } from "../agent/pod-api.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { podBankSpec, defaultSetpoints } from "../pod/bank.js";
import { failSafeMatrix, leaseFailWrites } from "../pod/fail-safe.js";
import { podLayout } from "../pod/layout.js";
import { PodWiring } from "../pod/wiring.js";
import { simConfig } from "../sim/config.js";
import { primaryShare } from "../sim/plant/pod-plant.js";
import { SupervisedPod } from "./helpers/supervised-pod.js";

type CduData = Record<string, unknown>;
const withSupply = (d: Record<string, unknown>): void => {
  (d.cdu as CduData).supplyControl = { valve: "cdu.primaryValveCommandPct", failValve: "cdu.primaryFailValvePct" };
};

/** The demo pod at 60 % load on 22 °C facility water, with or without supply control; its supply temperature's range over each phase. */
function run(on: boolean): { pod: SupervisedPod; phases: { lo: number; hi: number; last: number; settledS: number | null }[] } {
  const c = demoAgentConfig(on ? withSupply : undefined);
  const pod = new SupervisedPod(simConfig({ plant: { primarySupplyTempC: 22, load: { profile: "idle", pct: 60 } } }), c);
  const sp = c.control.supplyTempSetpointC;
  const phases: { lo: number; hi: number; last: number; settledS: number | null }[] = [];
  const phase = (s: number): void => {
    const t0 = pod.vp.timeMs;
    const r = { lo: Infinity, hi: -Infinity, last: NaN, settledS: null as number | null };
    pod.run(s, () => {
      const t = pod.vp.sim.plant.cdu.supplyTempC;
      r.lo = Math.min(r.lo, t);
      r.hi = Math.max(r.hi, t);
      r.last = t;
      // within 0.5 °C of the setpoint from here on
      if (Math.abs(t - sp) > 0.5) r.settledS = null;
      else r.settledS ??= (pod.vp.timeMs - t0) / 1000;
    });
    phases.push(r);
  };
  phase(300);
  pod.vp.sim.inject({ primarySupplyTempC: 18 }); // the facility water colder
  phase(300);
  pod.vp.sim.inject({ load: "all", pct: 90 });
  phase(200);
  return { pod, phases };
}

describe("supply-temperature control, end to end in virtual time", () => {
  it("holds the CDU's supply at its setpoint through a colder facility water and a load step; without it the supply follows the facility", () => {
    const on = run(true);
    const [start, colder, load] = on.phases;
    expect(start.settledS).not.toBeNull();
    expect(start.settledS!).toBeLessThan(120);
    expect(Math.abs(start.last - 30)).toBeLessThan(0.2);
    // 4 °C colder facility water: the valve throttles; the supply dips under 1 °C and is back within 0.5 °C in a minute
    expect(colder.lo).toBeGreaterThan(29);
    expect(colder.settledS!).toBeLessThan(60);
    expect(load.hi - load.lo).toBeLessThan(0.5);
    expect(on.pod.vp.sim.plant.cdu.primaryValve.position).toBeLessThan(60);
    expect(on.pod.raised().filter((id) => id.includes("cdu.supply"))).toEqual([]);
    const off = run(false);
    expect(off.phases[0].last).toBeLessThan(26);
    expect(off.phases[1].last).toBeLessThan(22.5);
    expect(off.pod.vp.sim.plant.cdu.primaryValve.position).toBe(100);
  });

  it("opens the valve (full cooling) when the supply reading fails, and names the input in its alarm", () => {
    const pod = new SupervisedPod(simConfig({ plant: { primarySupplyTempC: 22, load: { profile: "idle", pct: 60 } } }), demoAgentConfig(withSupply));
    pod.run(300);
    expect(pod.vp.sim.plant.cdu.primaryValve.command).toBeLessThan(60);
    pod.vp.sim.inject({ sensor: "cdu.supplyTempC", fault: "nan" });
    pod.run(60);
    expect(pod.vp.sim.plant.cdu.primaryValve.command).toBe(100);
    expect(pod.supervisor.alarms.get("failsafe:cdu.supply")?.message).toMatch(/^cdu\.supply in fail-safe: PV input bad \(/);
    pod.vp.sim.inject({ sensor: "cdu.supplyTempC", fault: "clear" });
    pod.run(300);
    expect(Math.abs(pod.vp.sim.plant.cdu.supplyTempC - 30)).toBeLessThan(0.5);
  });

  it("the simulator's valve: its device's lease takes it to its fail position; the exchanger's share of effectiveness rises with it to exactly 1", () => {
    const pod = new SupervisedPod(simConfig({ plant: { primarySupplyTempC: 22 } }), demoAgentConfig(withSupply));
    pod.run(120);
    const dev = pod.vp.sim.devices;
    expect(dev.cdu.ctx.primaryFailPct).toBe(100); // written from control.supplyLoop.safeOnLeaseLoss: open
    dev.cdu.ctx.primaryCmdPct = 20;
    dev.cdu.ctx.wd.leaseMs = 1;
    dev.apply();
    expect(pod.vp.sim.plant.cdu.primaryValve.command).toBe(100);
    expect([primaryShare(0), primaryShare(100), primaryShare(150)]).toEqual([0, 1, 1]);
    expect(primaryShare(50)).toBeCloseTo(0.818, 3);
  });
});

describe("the supply loop in the pod stage", () => {
  const c = demoAgentConfig(withSupply);
  const lay = podLayout(c);

  it("comes after the pump loop, on the CDU's supply temperature, direct-acting, with its own envelope", () => {
    expect(lay.supplyLoop).toBe(lay.pumpLoop + 1);
    expect(lay.loops).toBe(10);
    expect([lay.loopName(9), lay.loopIndex("cdu.supply"), lay.loopKind(9), lay.loopKind(8), lay.loopKind(0)]).toEqual(["cdu.supply", 9, "supply", "pump", "rack"]);
    expect(podLayout(demoAgentConfig()).supplyLoop).toBeUndefined();
    const spec = podBankSpec(c.control, lay, c.racks);
    expect(spec.loops[9]).toMatchObject({ pvPoint: lay.cdu.supplyTempC, action: "direct", sp: 30, safeOnSensorFault: "open", outMin: 0, outMax: 100 });
    expect(spec.points[lay.cdu.supplyTempC]).toMatchObject({ stuckLoop: 9 });
    expect(defaultSetpoints(c.control, lay)[9]).toBe(30);
    expect(loopEnvelope(commandLimits(c), "supply")).toEqual({ setpoint: { min: 20, max: 40 }, setpointWords: "supply-temperature setpoint (°C)", output: { min: 0, max: 100 } });
  });

  it("takes a setpoint command inside its own envelope, and refuses one outside it", async () => {
    const set: [number, number][] = [];
    // the executor's face on the pod, as much of it as a setpoint reaches
    const commander = { layout: lay, limits: commandLimits(c), setSetpoint: (loop: number, v: number) => Promise.resolve(void set.push([loop, v])) } as unknown as PodCommander;
    expect(await executeCommand(commander, { command: "setpoint", params: { loop: "cdu.supply", value: 45, leaseS: 60 } }, "test")).toEqual({
      status: "rejected",
      code: "out-of-envelope",
      reason: "supply-temperature setpoint (°C) 45 is outside the configured envelope [20, 40]",
    });
    expect(await executeCommand(commander, { command: "setpoint", params: { loop: "cdu.supply", value: 32, leaseS: 60 } }, "test")).toMatchObject({ status: "ok" });
    expect(set).toEqual([[9, 32]]);
  });

  it("writes the valve, its shutdown value and its fail position, and lists it in the fail-safe matrix", () => {
    const w = new PodWiring(c, lay, { writeCaps: true });
    const writes = new Map<string, number>();
    const loopOut = [...new Array<number>(8).fill(50), 70, 42.04];
    w.writeActuators({ loopOut, rackSupplyOpen: new Array<number>(8).fill(1), rackReturnOpen: new Array<number>(8).fill(1) }, w.initialDecisions(), { setOutput: (id, v) => writes.set(id, v) });
    expect(writes.get("cdu.primaryValveCommandPct")).toBe(42);
    expect(w.safeWrites(undefined, c.control).at(-1)).toEqual({ id: "cdu.primaryValveCommandPct", value: 100 });
    expect(leaseFailWrites(c)).toContainEqual({ id: "cdu.primaryFailValvePct", value: 100 });
    expect(failSafeMatrix(c, c.supervisor.escalation).at(-1)).toMatchObject({ actuator: "CDU primary valve", outputs: ["cdu.primaryValveCommandPct"], behaviour: { badInput: "open (100 %) while its supply-temperature reading is bad" } });
  });

  it("is refused without a supply sensor, and with a lease hold it cannot write", () => {
    expect(() => demoAgentConfig((d) => {
      withSupply(d);
      (d.cdu as { points: Record<string, string> }).points = { dpKpa: "cdu.dpKpa" };
    })).toThrow(/cdu\.supplyControl: needs cdu\.points\.supplyTempC/);
    expect(() => demoAgentConfig((d) => {
      withSupply(d);
      d.control = { ...(d.control as object), supplyLoop: { safeOnLeaseLoss: "hold" } };
    })).toThrow(/control\.supplyLoop\.safeOnLeaseLoss: "hold" cannot be written to cdu\.supplyControl\.failValve/);
    expect(() => demoAgentConfig((d) => {
      d.control = { ...(d.control as object), supplyTempSetpointC: 45 };
    })).toThrow(/control\.supplyTempSetpointC: must be within \[supplyTempSetpointMinC, supplyTempSetpointMaxC\]/);
  });
});
