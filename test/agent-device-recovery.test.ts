// A device that answers again is used again within its breaker's half-open period plus one poll
// (issue #52 item 6), end to end: the agent against the simulator in a process of its own, the
// device silenced until its breaker opens, then answering again; its readings come back into the
// pod's status and its loop, from the first probe the breaker lets go, with no probe lost.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoConfigData } from "../cli/demo-config.js";
import { monoMs } from "../lib/clock.js";
import { startSimProcess, type SimProcess } from "../tooling/sim-process.js";
import { agentConfig, testAgent, TEST_POD } from "./helpers/agent.js";
import { stopProcess, waitFor } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("a device that answers again, through the agent", () => {
  let dir: string;
  let sim: SimProcess;
  const fault = async (body: object): Promise<void> => {
    const r = await fetch(`${sim.controlUrl}/fault`, { method: "POST", body: JSON.stringify(body) });
    expect(r.status).toBe(200);
  };

  beforeAll(async () => {
    dir = tempDir("podwarden-recovery-");
    sim = await startSimProcess(dir, 5000);
  }, 30_000);
  afterAll(async () => {
    await stopProcess(sim.child);
    rmSync(dir, { recursive: true, force: true });
  });

  it("is polled at the first probe its breaker lets go once it answers, and its readings are back in the pod's status", async () => {
    const data = demoConfigData((name) => sim.ports[name]) as unknown as { modbus: { devices: Record<string, unknown>[] } };
    // rack-3's breaker: open after one failure, for 0.5-1 s
    data.modbus.devices = data.modbus.devices.map((d) => (d.name === "rack-3" ? { ...d, breaker: { failures: 1, openMs: 500, maxOpenMs: 1000 } } : d));
    const { agent } = testAgent(agentConfig({ ...(data as object), pod: TEST_POD }));
    await agent.start();
    try {
      const flow = "rack-3.flowLpm";
      const device = (): { breaker: string; breakerRetryAtMs: number | null; trips: number; stats: { timeouts: number } } => agent.field.modbus.stats().devices.find((d) => d.name === "rack-3")!;
      await waitFor(() => agent.points.get(flow)?.quality === "good" && agent.status().racks[2].flowLpm !== null, "rack-3's flow in the pod's status", 20_000);
      await fault({ device: "rack-3", offline: true });
      await waitFor(() => agent.status().racks[2].flowLpm === null, "rack-3's flow gone from the status while it is silent", 10_000);
      // open, its probe failed and reopened it: the worst moment for it to come back, its whole period ahead
      let probed = false;
      await waitFor(
        () => {
          probed ||= device().breaker === "half-open";
          return probed && device().breaker === "open" && (device().breakerRetryAtMs ?? 0) - monoMs() > 300;
        },
        "its breaker open again after a failed probe",
        10_000,
        1,
      );
      const retryAt = device().breakerRetryAtMs!;
      const timeouts = device().stats.timeouts;
      await fault({ device: "rack-3", offline: false });
      await waitFor(() => agent.points.get(flow)?.quality === "good", "rack-3 read again", 10_000);
      // from the first probe the breaker let go: none before it, none lost after the device was back
      expect(agent.points.get(flow)!.sourceTimeMs).toBeGreaterThanOrEqual(retryAt);
      expect(device().stats.timeouts).toBe(timeouts);
      expect(device().breaker).toBe("closed");
      await waitFor(() => agent.status().racks[2].flowLpm !== null, "rack-3's flow back in the pod's status", 10_000);
      expect(agent.field.io.health().find((h) => h.name === "rack-3")).toMatchObject({ ok: true });
    } finally {
      await agent.stop({ driveSafe: false, reason: "test end" });
      await fault({ clear: "all" });
    }
  }, 60_000);
});
