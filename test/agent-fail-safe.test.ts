// Fail-safe per actuator per fault class, end to end against the simulator over real Modbus TCP:
// a rack's own shutdown value reaches its valve at a clean stop, and the fail positions the
// config declares are written to the devices, which then apply them on their own when the
// agent is gone and their leases expire.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../agent/agent.js";
import { agentConfig, demoConfigFor, testAgent } from "./helpers/agent.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";

describe("fail-safe per actuator, at the devices", () => {
  let t: TestSim;
  let agent: Agent | undefined;

  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 1500 } });
  });
  afterAll(async () => {
    await agent?.stop({ driveSafe: false, reason: "test end" });
    await t.stop();
  });

  it("writes each device's declared fail positions, drives each valve to its own shutdown value at a stop, and the devices take over on lease expiry", async () => {
    const config = agentConfig(
      demoConfigFor(t.sim, (c) => {
        const racks = c.racks as { failSafe?: object }[];
        // rack-2 differs from its kind: closed at a shutdown, 35 % and isolation valves open on lease loss
        racks[1].failSafe = { safeOnShutdown: "closed", safeOnLeaseLoss: { fixed: 35 }, isolationOnLeaseLoss: "open" };
        c.control = { ...(c.control as object), pumpLoop: { safeOnLeaseLoss: { fixed: 60 } } };
      }),
    );
    agent = testAgent(config).agent;
    await agent.start();
    const dev = t.sim.devices;
    // the simulator's devices start from their own defaults (valve 100 %, isolation hold, pump 80 %)
    await waitFor(() => dev.racks[1].ctx.failValvePct === 35 && dev.racks[1].ctx.failIsolationOpen && dev.cdu.ctx.failSpeedPct === 60, "fail positions written", 10_000);
    expect(dev.racks[0].ctx.failValvePct).toBe(100);
    expect(dev.racks[0].ctx.failIsolationOpen).toBe(false);
    await waitFor(() => agent!.control.outputs() !== undefined && t.sim.truth().racks[1].valveCommandPct < 100, "rack-2 in control", 60_000);

    const a = agent;
    agent = undefined;
    await a.stop({ driveSafe: true, reason: "test" });
    // the commands the devices received at the stop: each valve's shutdown value
    expect(dev.racks[1].ctx.valveCmdPct).toBe(config.control.rackLoop.outMin); // rack-2: closed
    expect(dev.racks[0].ctx.valveCmdPct).toBe(config.control.rackLoop.outMax); // its kind's: open
    expect(dev.cdu.ctx.speedCmdPct).toBe(80); // the pump's kind: fixed 80
    // no heartbeat any more: each device's lease expires and it applies its own fail position
    await waitFor(() => t.sim.truth().devices.every((d) => d.leaseExpired), "every lease expired", 10_000);
    await waitFor(() => t.sim.truth().racks[1].valveCommandPct === 35 && t.sim.truth().cdu.pumpSpeedCmdPct === 60, "fail positions applied", 5_000);
    expect(t.sim.truth().racks[0].valveCommandPct).toBe(100);
  }, 120_000);
});
