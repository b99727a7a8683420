// Operator decisions survive a restart and a reload: an isolation for hose work, a loop in
// Manual, maintenance, a leased setpoint and a leased Override are all back before the first tick, or dropped with
// an alarm when they no longer fit; a decision that cannot be saved is refused and changes nothing.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Agent, type CarriedState } from "../agent/agent.js";
import type { Outcome } from "../agent/pod-api.js";
import { executeCommand } from "../agent/commands/executor.js";
import type { CommandBody } from "../agent/commands/schema.js";
import { Logs } from "../agent/log.js";
import { agentConfig, demoConfigFor, LogCapture, testAgent } from "./helpers/agent.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

const saved = (dir: string): Record<string, unknown> | null => {
  try {
    return JSON.parse(readFileSync(join(dir, "operator.json"), "utf8")) as Record<string, unknown>;
  } catch {
    return null;
  }
};

const command = (command: string, params: Record<string, unknown>): CommandBody => ({ command, params, transaction: "t", pod: "x", seq: 1, issuedAt: "", expiresAt: "" }) as unknown as CommandBody;

describe("operator decisions across a restart and a reload", () => {
  let t: TestSim;
  const dirs: string[] = [];
  const agents: Agent[] = [];
  const newDir = (): string => {
    const d = tempDir("podwarden-operator-");
    dirs.push(d);
    return d;
  };
  const configData = (dir: string | undefined, patch: (c: Record<string, unknown>) => void = () => undefined): unknown =>
    demoConfigFor(t.sim, (c) => {
      if (dir !== undefined) c.stateDir = dir;
      else delete c.stateDir;
      patch(c);
    });
  const start = async (dir: string | undefined, carried?: CarriedState, patch?: (c: Record<string, unknown>) => void): Promise<Agent> => {
    const config = agentConfig(configData(dir, patch));
    const agent = carried === undefined ? testAgent(config).agent : new Agent({ config, hash: "test", path: "test" }, new Logs(config.log, { site: config.site, pod: config.pod }, new LogCapture()), carried);
    agents.push(agent);
    await agent.start();
    return agent;
  };
  const stop = (a: Agent): Promise<void> => a.stop({ driveSafe: true, reason: "restart" });
  const valvePct = (rack: number): number => t.sim.truth().racks[rack].supplyIsolationPct;
  /** An operator isolates only a rack whose load is off (executor.ts, loadedRackRefusal). */
  const unload = async (a: Agent, rack: number): Promise<void> => {
    t.sim.inject({ load: `rack-${rack + 1}`, pct: 0 });
    await waitFor(() => (a.commander.rackLoad(rack).drawKw ?? 99) <= a.commander.rackLoad(rack).limitKw, `rack-${rack + 1} unloaded`, 10_000);
  };

  /**
   * An operator's isolation of an unloaded rack, asked again while the refusal is the load check's
   * alone: on a loaded machine the power reading can go stale for a moment between `unload` and
   * the command (CI, 2026-12-06), and an operator would simply ask again.
   */
  const isolateUnloaded = async (a: Agent, rack: string): Promise<Outcome | null> => {
    let out: Outcome | null = null;
    await waitFor(
      async () => {
        out = await executeCommand(a.commander, command("isolate-rack", { rack }), "test");
        if (out.status === "ok") return true;
        expect(out.reason).toMatch(/power meter has no good reading|draws .* kW, above/);
        return false;
      },
      `${rack} isolated by an operator`,
      10_000,
      100,
    );
    return out;
  };

  beforeAll(async () => {
    t = await startTestSim();
  });
  // a test that failed part-way leaves its agent running on the shared plant: stopped here, or it
  // goes on writing the valves the next test watches (a fresh clone's CI, 2026-12-07: the next
  // test found rack-7's isolation valve half open, opened by the agent the failed test left)
  afterEach(async () => {
    for (const a of agents) await a.stop({ driveSafe: false, reason: "test end" });
  });
  afterAll(async () => {
    await t.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("keeps an operator's isolation through a restart: the valves stay shut from the first write, until return-rack", async () => {
    const dir = newDir();
    const a = await start(dir);
    await unload(a, 3);
    expect(await isolateUnloaded(a, "rack-4")).toMatchObject({ status: "ok" });
    expect(saved(dir)?.isolatedRacks).toEqual(["rack-4"]); // on disk when the command answered
    await waitFor(() => valvePct(3) === 0, "isolated");
    await stop(a);
    expect(valvePct(3)).toBe(0); // a clean stop leaves an isolated rack isolated

    const b = await start(dir);
    expect(b.status().racks[3].isolatedByOperator).toBe(true);
    // the first writes keep the rack shut: the valve is never commanded open in between
    // (the leak thread writes the isolation valves, and reports what it wrote every 50 ms)
    await waitFor(() => (b.field.io.outputState("rack-4.supplyIsolationOpen")?.value ?? null) !== null, "the first isolation command", 5000);
    expect(b.field.io.outputState("rack-4.supplyIsolationOpen")?.value).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(valvePct(3)).toBe(0);
    expect(await executeCommand(b.commander, command("return-rack", { rack: "rack-4" }), "test")).toMatchObject({ status: "ok" });
    expect(saved(dir)?.isolatedRacks).toEqual([]);
    await waitFor(() => valvePct(3) === 100, "returned to service");
    await stop(b);
  });

  it("keeps a loop in Manual, maintenance and a leased setpoint through a restart, with the lease's time still running", async () => {
    const dir = newDir();
    const a = await start(dir);
    expect(await executeCommand(a.commander, command("mode", { loop: "rack-2.valve", mode: "Manual", outputPct: 37 }), "test")).toMatchObject({ status: "ok" });
    expect(await executeCommand(a.commander, command("mode", { maintenance: true }), "test")).toMatchObject({ status: "ok" });
    expect(await executeCommand(a.commander, command("setpoint", { loop: "rack-5.valve", value: 41, leaseS: 60 }), "key ops-1")).toMatchObject({ status: "ok" });
    await waitFor(() => a.control.outputs()?.loopOut[1] === 37, "manual output in force");
    await stop(a);

    const b = await start(dir);
    await waitFor(() => b.control.outputs()?.loopOut[1] === 37, "manual output restored");
    expect(b.status().maintenance).toBe(true); // beside the mode, not instead of it
    expect(b.mode()).not.toBe("Maintenance");
    const lease = (b.snapshot().setpointLeases as { loop: string; value: number; expiresInMs: number; by: string }[]).find((l) => l.loop === "rack-5.valve");
    expect(lease).toMatchObject({ value: 41, by: "key ops-1" });
    expect(lease?.expiresInMs).toBeGreaterThan(0);
    expect(lease?.expiresInMs).toBeLessThanOrEqual(60_000);
    expect(b.status().racks[4].setpointC).toBe(41);
    // back to Automatic and out of maintenance: the file forgets them
    await executeCommand(b.commander, command("mode", { loop: "rack-2.valve", mode: "Automatic" }), "test");
    await executeCommand(b.commander, command("mode", { maintenance: false }), "test");
    expect(saved(dir)).toMatchObject({ loopModes: [], maintenance: false });
    await stop(b);
  });

  it("holds an Override only for its lease, over the Manual an operator left, and keeps the lease's time through a restart", async () => {
    const dir = newDir();
    const a = await start(dir);
    const loopOut = (x: Agent): number | undefined => x.control.outputs()?.loopOut[1];
    expect(await executeCommand(a.commander, command("mode", { loop: "rack-2.valve", mode: "Manual", outputPct: 37 }), "test")).toMatchObject({ status: "ok" });
    // an Override is a remote value: without a lease, or longer than the longest one, it is refused
    expect(await executeCommand(a.commander, command("mode", { loop: "rack-2.valve", mode: "Override", outputPct: 80 }), "test")).toMatchObject({ status: "rejected", code: "invalid-params", reason: expect.stringMatching(/Override needs leaseS/) as unknown });
    expect(await executeCommand(a.commander, command("mode", { loop: "rack-2.valve", mode: "Override", outputPct: 80, leaseS: a.limits.maxLeaseS + 1 }), "test")).toMatchObject({ status: "rejected", code: "out-of-envelope" });
    // and Manual, the mode that stays, takes no lease
    expect(await executeCommand(a.commander, command("mode", { loop: "rack-2.valve", mode: "Manual", outputPct: 30, leaseS: 10 }), "test")).toMatchObject({ status: "rejected", code: "invalid-params", reason: expect.stringMatching(/leaseS is only for Override/) as unknown });
    expect(await executeCommand(a.commander, command("mode", { loop: "rack-2.valve", mode: "Override", outputPct: 80, leaseS: 600 }), "key mc-1")).toMatchObject({ status: "ok" });
    await waitFor(() => loopOut(a) === 80, "override in force");
    // on disk when the command answered, over the Manual underneath
    expect(saved(dir)).toMatchObject({ loopModes: [{ loop: "rack-2.valve", mode: "Manual", outputPct: 37 }], overrides: [{ loop: "rack-2.valve", outputPct: 80, by: "key mc-1" }] });
    await stop(a);

    const b = await start(dir);
    await waitFor(() => loopOut(b) === 80, "override restored");
    const lease = (b.snapshot().overrides as { loop: string; outputPct: number; expiresInMs: number; by: string }[])[0];
    expect(lease).toMatchObject({ loop: "rack-2.valve", outputPct: 80, by: "key mc-1" });
    expect(lease.expiresInMs).toBeGreaterThan(0);
    expect(lease.expiresInMs).toBeLessThanOrEqual(600_000);
    // a renewal with a short lease runs out: the loop goes back to the operator's Manual, and says so
    const expired: unknown[] = [];
    b.onEvent((e) => {
      if (e.type === "override.expired") expired.push(e);
    });
    expect(await executeCommand(b.commander, command("mode", { loop: "rack-2.valve", mode: "Override", outputPct: 70, leaseS: 1 }), "key mc-1")).toMatchObject({ status: "ok" });
    await waitFor(() => expired.length === 1, "override expired", 10_000);
    expect(expired[0]).toEqual({ type: "override.expired", loop: "rack-2.valve", mode: "Manual", outputPct: 37 });
    await waitFor(() => loopOut(b) === 37, "back to the Manual output");
    expect(b.snapshot().overrides).toEqual([]);
    // a mode command ends an Override at once, and the file forgets it
    expect(await executeCommand(b.commander, command("mode", { loop: "rack-2.valve", mode: "Override", outputPct: 60, leaseS: 600 }), "key mc-1")).toMatchObject({ status: "ok" });
    await waitFor(() => loopOut(b) === 60, "second override");
    expect(await executeCommand(b.commander, command("mode", { loop: "rack-2.valve", mode: "Automatic" }), "test")).toMatchObject({ status: "ok" });
    expect(saved(dir)).toMatchObject({ loopModes: [], overrides: [] });
    expect(b.snapshot().overrides).toEqual([]);
    await stop(b);
  });

  it("drops what no longer fits at a restart (a lease run out, a rack gone), raising an alarm for what was lost", async () => {
    const dir = newDir();
    writeFileSync(
      join(dir, "operator.json"),
      JSON.stringify({
        isolatedRacks: ["rack-9", "rack-1"],
        loopModes: [
          { loop: "rack-3.valve", mode: "Manual", outputPct: 1000 },
          { loop: "rack-4.valve", mode: "Override", outputPct: 50 },
        ],
        maintenance: false,
        setpoints: [{ loop: "rack-6.valve", value: 40, expiresAtMs: Date.now() - 1000, by: "earlier" }],
        // a loop check's force kept past maintenance's end (as a version before 2026-12-07 could)
        overrides: [{ loop: "rack-5.valve", outputPct: 30, expiresAtMs: Date.now() + 600_000, by: "local admin socket (io force rack-5.valveCommandPct)" }],
        savedAt: new Date().toISOString(),
      }),
    );
    const a = await start(dir);
    expect(a.status().racks[0].isolatedByOperator).toBe(true);
    await waitFor(() => a.supervisor.alarms.get("state:operator-dropped") !== undefined, "alarm");
    expect(a.supervisor.alarms.get("state:operator-dropped")?.message).toMatch(/rack-9: no such rack now.*rack-3.valve: 1000 % is outside.*Override on rack-4.valve: an Override holds only for a lease/);
    expect(a.supervisor.alarms.get("state:operator-dropped")?.message).toContain("Override on rack-5.valve by local admin socket (io force rack-5.valveCommandPct): a loop check's force, and the pod is not in maintenance");
    expect(a.snapshot().overrides).toEqual([]);
    expect(a.snapshot().setpointLeases).toEqual([]); // ran out while the agent was down
    expect(a.status().racks[4].setpointC).not.toBe(40);
    await stop(a);
  });

  it("starts with a damaged operator file: isolates nothing it cannot read, moves it aside, and raises a Critical alarm", async () => {
    const dir = newDir();
    writeFileSync(join(dir, "operator.json"), JSON.stringify({ isolatedRacks: "rack-1" }));
    const a = await start(dir);
    await waitFor(() => a.supervisor.alarms.get("state:operator")?.severity === "Critical", "alarm");
    expect(a.supervisor.alarms.get("state:operator")?.message).toMatch(/must have required property.*moved to/);
    await stop(a);
  });

  it("refuses a decision it cannot save, with an alarm, and changes nothing", async () => {
    const dir = newDir();
    const a = await start(dir);
    // every write goes through operator.json.bg.tmp: a directory in its place makes each one fail
    mkdirSync(join(dir, "operator.json.bg.tmp"));
    await unload(a, 5);
    // asked again while the load check alone refuses it (isolateUnloaded): a power reading gone
    // stale for a moment on a loaded machine is not what this test is about
    let out: { status: string; reason?: string } = { status: "none" };
    await waitFor(
      async () => {
        out = await executeCommand(a.commander, command("isolate-rack", { rack: "rack-6" }), "test").catch((err: Error) => ({ status: "thrown", reason: err.message }));
        return !(out.status === "rejected" && /power meter has no good reading|draws .* kW, above/.test(out.reason ?? ""));
      },
      "an answer other than the load check's",
      10_000,
      100,
    );
    expect(out).toMatchObject({ status: "thrown", reason: expect.stringMatching(/cannot be saved, so it is refused/) as unknown });
    expect(a.status().racks[5].isolatedByOperator).toBe(false);
    await waitFor(() => a.supervisor.alarms.get("state:operator-write") !== undefined, "alarm");
    await new Promise((r) => setTimeout(r, 200));
    expect(valvePct(5)).toBe(100);
    await stop(a);
  });

  it("hands isolation, Manual and the budget to the agent a structural reload builds, with no state directory at all", async () => {
    const a = await start(undefined);
    await a.commander.isolateRack(6, true);
    await a.commander.setLoopMode(2, "Manual", 55);
    await a.commander.setPowerBudget(600);
    await waitFor(() => valvePct(6) === 0, "isolated");
    await a.stop({ driveSafe: false, reason: "reload" });
    const carried = a.carryOver();
    // the new config has a new alarm dwell: a structural change in the daemon's terms is made
    // the same way, by building a new agent from the new config and what the old one carried
    const b = await start(undefined, carried, (c) => (c.supervisor = { ...(c.supervisor as object), alarmClearDwellMs: 200 }));
    expect(b.status().racks[6].isolatedByOperator).toBe(true);
    expect(b.supervisor.powerBudgetKw).toBe(600);
    await waitFor(() => b.control.outputs()?.loopOut[2] === 55, "manual output carried");
    await new Promise((r) => setTimeout(r, 200));
    expect(valvePct(6)).toBe(0);
    await b.commander.isolateRack(6, false);
    await b.commander.setLoopMode(2, "Automatic");
    await stop(b);
  });
});
