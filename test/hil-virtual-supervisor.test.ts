// HIL in virtual time with the daemon's supervisor beside the virtual pod (hil/supervised-pod.ts):
// the supervisor's alarms and events are judged there as in real time, from the same rules, and
// an alarm or event only the daemon has is skipped, saying so.
import { describe, expect, it } from "vitest";
import { demoAgentConfig } from "../cli/demo-config.js";
import { SupervisedPod, virtualAlarm } from "../hil/supervised-pod.js";
import { parseHilScenario } from "../hil/scenario.js";
import { runVirtual } from "../hil/virtual-runner.js";
import { loadSimConfig, simConfig } from "../sim/config.js";

describe("HIL in virtual time, with the supervisor", () => {
  const pod = demoAgentConfig();
  const sim = loadSimConfig("configs/sim-pod.yaml");
  const base = { name: "t", duration: "10s", expect: [{ name: "e", signal: "truth.rack-3.supplyIsolationPct", is: { le: 1 }, eventually: { by: "5s" } }] };
  const withSignal = (signal: string): ReturnType<typeof parseHilScenario> => parseHilScenario({ ...base, expect: [base.expect[0], { name: "a", signal, is: { eq: 0 }, hold: {} }] }, "alarm.yaml");

  it("judges a leak's alarm, the Critical count and its isolation proven once", () => {
    const leak = parseHilScenario(
      {
        ...base,
        steps: [{ at: "2s", leak: "rack-3" }],
        expect: [
          { name: "raised", signal: "alarm.leak:rack-3", is: { eq: 1 }, eventually: { by: "3s" } },
          { name: "critical", signal: "alarms.critical", is: { ge: 1 }, eventually: { by: "3s" } },
          { name: "quiet first", signal: "alarms.critical", is: { eq: 0 }, hold: { to: "1.5s" } },
          { name: "proven", signal: "events.isolation.proven", is: { eq: 1 }, count: { min: 1, max: 1 } },
          { name: "no other rack", signal: "alarm.leak:rack-4", is: { eq: 1 }, never: {} },
        ],
      },
      "leak.yaml",
    );
    const judged = runVirtual(leak, sim, pod);
    expect(judged.verdicts.map((v) => [v.name, v.skipped, v.passed])).toEqual([
      ["raised", undefined, true],
      ["critical", undefined, true],
      ["quiet first", undefined, true],
      ["proven", undefined, true],
      ["no other rack", undefined, true],
    ]);
    // the same expectation on the wrong rack fails: the alarm series is read, not assumed
    const wrong = parseHilScenario({ ...base, steps: [{ at: "2s", leak: "rack-3" }], expect: [{ name: "r4", signal: "alarm.leak:rack-4", is: { eq: 1 }, eventually: { by: "9s" } }] }, "wrong.yaml");
    expect(runVirtual(wrong, sim, pod).passed).toBe(false);
  });

  it("raises a silent device's alarm from its circuit breaker, as the daemon's field I/O does", () => {
    const offline = parseHilScenario(
      { ...base, steps: [{ at: "2s", device: "rack-5", offline: true }], expect: [{ name: "device", signal: "alarm.device:rack-5", is: { eq: 1 }, eventually: { by: "4s" } }, { name: "before", signal: "alarm.device:rack-5", is: { eq: 0 }, hold: { to: "1.9s" } }] },
      "offline.yaml",
    );
    const r = runVirtual(offline, sim, pod);
    expect(r.verdicts.map((v) => [v.name, v.passed])).toEqual([
      ["device", true],
      ["before", true],
    ]);
  });

  it("skips what only the daemon has, with the reason", () => {
    const daemons = runVirtual(withSignal("alarm.state:latches"), sim, pod);
    expect(daemons.verdicts[1].skipped).toMatch(/skipped in virtual time: no source of alarm\.state:latches there \(only the supervisor's rack, loop, device, pump and power alarms are\); real time \(--rig\) judges it/);
    const audit = runVirtual(withSignal("events.command.audit"), sim, pod);
    expect(audit.verdicts[1].skipped).toMatch(/skipped in virtual time: events\.command\.audit are the daemon's, not its supervisor's/);
    for (const id of ["leak:rack-1", "failsafe:rack-1.valve", "device:cdu", "pump:pump-1", "power:budget", "pumps:unavailable"]) expect(virtualAlarm(id), id).toBe(true);
    for (const id of ["control:stalled", "control:overrun", "state:latches", "uplink:commands", "valve:rack-1", "stroke:rack-1.supply", "tune:rack-1.valve", "power", "recorder"]) expect(virtualAlarm(id), id).toBe(false);
  });

  it("runs the same supervisor as the daemon on the same inputs: a budget the racks exceed caps them and raises power:budget", () => {
    const c = demoAgentConfig();
    const sp = new SupervisedPod(simConfig({ plant: { load: { profile: "idle", pct: 100 } } }), c);
    sp.run(30);
    expect(sp.active.get("power:budget")).toBe("Warning");
    const total = sp.vp.sim.plant.racks.reduce((a, r) => a + r.powerKw, 0);
    expect(total).toBeLessThanOrEqual(c.supervisor.powerBudget.podKw * 1.01);
  });
});

describe("a rack with no power output (noCoolant.action: none), in virtual time", () => {
  it("stands no-power-output from the start, and at a leak says to power it down at the rack, as its power stays on", () => {
    const c = demoAgentConfig((d) => {
      const racks = d.racks as { name: string; noCoolant?: object; outputs: Record<string, unknown> }[];
      delete racks[2].outputs.powerOff;
      delete racks[2].outputs.powerCap;
      racks[2].noCoolant = { action: "none" };
      (d.supervisor as Record<string, unknown>).escalation = { rackPowerOff: false };
      (d.supervisor as { powerBudget: Record<string, unknown> }).powerBudget.writeCaps = false;
    });
    const sp = new SupervisedPod(simConfig({ plant: { load: { profile: "idle", pct: 60 } } }), c);
    sp.run(2);
    expect(sp.active.get("no-power-output:rack-3")).toBe("Warning");
    expect(sp.active.has("no-power-output:rack-2")).toBe(false);
    sp.vp.sim.inject({ leak: "rack-3" });
    sp.run(20);
    // isolated, and its power still on: nothing podwarden could write
    expect(sp.vp.sim.plant.racks[2].supplyIso.position).toBeLessThan(1);
    expect(sp.vp.sim.plant.racks[2].powerOff).toBe(false);
    expect(sp.active.get("no-coolant-power:rack-3")).toBe("Critical");
    const raised = sp.events.find((e) => e.type === "alarm.raised" && e.alarm.id === "no-coolant-power:rack-3");
    expect(raised?.type === "alarm.raised" ? raised.alarm.message : "").toMatch(/podwarden has no power output for it \(noCoolant\.action: none\): power it down at the rack/);
  });
});
