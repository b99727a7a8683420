// What a loop check's force of an output moves (agent/commissioning/force-target.ts), on the demo
// pod's config: a control loop's output as that loop's Override, every other output refused with
// its reason, an output the config does not name unknown.
import { describe, expect, it } from "vitest";
import { demoAgentConfig } from "../cli/demo-config.js";
import { forceTarget } from "../agent/commissioning/force-target.js";
import { podLayout } from "../pod/layout.js";

describe("forceTarget", () => {
  const c = demoAgentConfig((d) => {
    (d.cdu as Record<string, unknown>).supplyControl = { valve: "cdu.primaryValveCommandPct", failValve: "cdu.primaryFailValvePct" };
  });
  const layout = podLayout(c);

  it("forces a control loop's output as that loop's Override: a rack's valve, either pump's speed, the supply valve", () => {
    expect(forceTarget(c, layout, "rack-2.valveCommandPct")).toEqual({ kind: "loop", loop: layout.rackLoops[1], what: "rack-2's control valve" });
    expect(layout.loopName(layout.rackLoops[1])).toBe("rack-2.valve");
    for (const [id, pump] of [["cdu.pumpSpeedCommandPct", "pump-1"], ["cdu.pump2SpeedCommandPct", "pump-2"]]) {
      expect(forceTarget(c, layout, id)).toEqual({ kind: "loop", loop: layout.pumpLoop, what: `the pump loop (pump ${pump}'s speed while it runs)` });
    }
    expect(forceTarget(c, layout, "cdu.primaryValveCommandPct")).toEqual({ kind: "loop", loop: layout.supplyLoop, what: "the CDU's supply valve (primary side)" });
  });

  it("gives each isolation valve to the leak path, by rack", () => {
    expect(forceTarget(c, layout, "rack-3.supplyIsolationOpen")).toEqual({ kind: "isolation", rack: 2, what: "rack-3's supply isolation valve" });
    expect(forceTarget(c, layout, "rack-8.returnIsolationOpen")).toEqual({ kind: "isolation", rack: 7, what: "rack-8's return isolation valve" });
  });

  it("refuses the outputs a loop check must not take, each with its reason", () => {
    const refused = (id: string): string => {
      const t = forceTarget(c, layout, id);
      if (t?.kind !== "refused") throw new Error(`${id}: ${JSON.stringify(t)}`);
      return `${t.what}: ${t.why}`;
    };
    expect(refused("rack-1.powerOff")).toMatch(/^rack-1's power off: a rack's power follows its coolant/);
    expect(refused("rack-1.powerCapKw")).toMatch(/^rack-1's power cap: /);
    expect(refused("rack-1.failValvePct")).toMatch(/lease fail position: a fail position is the device lease's/);
    expect(refused("rack-1.failIsolationOpen")).toMatch(/lease fail position/);
    expect(refused("cdu.pumpEnable")).toMatch(/^pump pump-1's run enable: a pump's run keeps coolant in every rack/);
    expect(refused("cdu.pump2Enable")).toMatch(/^pump pump-2's run enable/);
    expect(refused("cdu.failSpeedPct")).toMatch(/^pump pump-1's lease fail speed/);
    expect(refused("cdu.primaryFailValvePct")).toMatch(/^the CDU's supply valve's lease fail position/);
  });

  it("knows no output the config does not name", () => {
    expect(forceTarget(c, layout, "rack-1.nothing")).toBeNull();
  });
});
