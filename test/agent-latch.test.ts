// A leak latch survives an agent restart: the rack stays isolated until an authorised reset.
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Agent } from "../agent/agent.js";
import { LatchStore } from "../agent/operator/latch-store.js";
import { RACK_NORMAL } from "../hotpath-as/assembly/layout.js";
import { agentConfig, demoConfigFor, testAgent } from "./helpers/agent.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

const savedLatches = (dir: string): string[] | null => {
  try {
    return (JSON.parse(readFileSync(join(dir, "latches.json"), "utf8")) as { racks: string[] }).racks;
  } catch {
    return null; // not written yet
  }
};

describe("leak latches across a restart", () => {
  let t: TestSim;
  let stateDir: string;
  const agents: Agent[] = [];
  /** An agent on the simulator; alarms clear 100 ms after their condition (5 s by default). */
  const start = async (dir = stateDir, leakThread = true): Promise<Agent> => {
    const { agent } = testAgent(
      agentConfig(
        demoConfigFor(t.sim, (c) => {
          c.stateDir = dir;
          c.supervisor = { ...(c.supervisor as object), alarmClearDwellMs: 100 };
          const control = (c.control ?? {}) as { isolation?: object };
          c.control = { ...control, isolation: { ...control.isolation, leakThread } };
        }),
      ),
    );
    agents.push(agent);
    await agent.start();
    return agent;
  };

  beforeAll(async () => {
    t = await startTestSim();
    stateDir = tempDir("podwarden-state-");
  });
  afterAll(async () => {
    for (const a of agents) await a.stop({ driveSafe: false, reason: "test end" });
    await t.stop();
  });

  it("re-isolates a latched rack after a restart, even though the leak has dried", async () => {
    const a = await start();
    t.sim.inject({ leak: "rack-2" });
    await waitFor(() => a.status().racks[1].isolation !== "Normal", "isolated");
    await waitFor(() => savedLatches(stateDir)?.includes("rack-2") === true, "latch saved");
    await a.stop({ driveSafe: true, reason: "restart" });
    t.sim.inject({ leak: "rack-2", state: "dry" });
    const b = await start();
    // isolated again from the first tick, and alarmed, without any wet reading
    await waitFor(() => b.status().racks[1].isolation !== "Normal", "restored latch");
    await waitFor(() => b.supervisor.alarms.get("leak:rack-2") !== undefined, "alarm");
    await waitFor(() => t.sim.truth().racks[1].supplyIsolationPct === 0, "valves closed");
    expect(b.supervisor.alarms.get("leak:rack-2")?.latched).toBe(true); // says what it is
    expect(await b.commander.resetLeak(1)).toBe("accepted");
    await waitFor(() => savedLatches(stateDir)?.length === 0, "latch cleared on disk");
    await waitFor(() => b.supervisor.alarms.get("leak:rack-2") === undefined, "alarm cleared after the reset");
    await b.stop({ driveSafe: false, reason: "next test" });
  });

  it("sends a new isolation's close commands before it writes the latch file (a slow disk cannot hold up the valves)", async () => {
    // the main thread's own path (serial devices, or the leak thread off); the leak thread
    // writes the close from its own thread, with no disk write on the way (test/leak-thread.test.ts)
    const a = await start(stateDir, false);
    const internals = a.loop;
    // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with its own `this`
    const save = LatchStore.prototype.save;
    let commandAtSave: number | null | undefined;
    const spy = vi.spyOn(LatchStore.prototype, "save").mockImplementation(function (this: LatchStore, racks: string[]) {
      if (racks.includes("rack-3") && commandAtSave === undefined) commandAtSave = a.field.modbus.outputState("rack-3.supplyIsolationOpen")?.value;
      return save.call(this, racks);
    });
    // The race this guards against: the supervisor's period falling between the control
    // thread's isolation and the interlock watch waking. Made certain here: inside the wet
    // sample's own turn (the agent has just handed it to the control thread), wait without
    // yielding for the tick that isolates, then run the supervisor before anything else can.
    let raced = false;
    const off = a.field.modbus.points.subscribe((p) => {
      if (raced || p.id !== "rack-3.leakState" || p.value !== 1) return;
      raced = true;
      const pause = new Int32Array(new SharedArrayBuffer(4));
      for (let n = 0; n < 500 && a.control.outputs()?.rackState[2] === RACK_NORMAL; n++) Atomics.wait(pause, 0, 0, 1);
      internals.supervise();
    });
    try {
      t.sim.inject({ leak: "rack-3" });
      await waitFor(() => savedLatches(stateDir)?.includes("rack-3") === true, "latch saved");
      expect(raced).toBe(true);
      expect(commandAtSave).toBe(0); // already commanded closed when the file was written
      await waitFor(() => t.sim.truth().racks[2].supplyIsolationPct === 0, "valves closed");
    } finally {
      off();
      spy.mockRestore();
      t.sim.inject({ leak: "rack-3", state: "dry" });
    }
    await waitFor(async () => (await a.commander.resetLeak(2)) === "accepted", "reset");
    await a.stop({ driveSafe: false, reason: "next test" });
  });

  it("raises state:latches-write while the latch file cannot be written, and clears it once a write succeeds", async () => {
    const dir = tempDir("podwarden-state-");
    // every write goes through latches.json.bg.tmp: a directory in its place makes each one fail
    // (a permission bit would not stop a test running as root)
    mkdirSync(join(dir, "latches.json.bg.tmp"));
    const a = await start(dir);
    t.sim.inject({ leak: "rack-5" });
    try {
      await waitFor(() => a.supervisor.alarms.get("state:latches-write")?.severity === "Critical", "write alarm");
      await waitFor(() => t.sim.truth().racks[4].supplyIsolationPct === 0, "valves closed all the same");
      expect(savedLatches(dir)).toBeNull();
      rmdirSync(join(dir, "latches.json.bg.tmp"));
      await waitFor(() => savedLatches(dir)?.includes("rack-5") === true, "latch saved once the disk takes it");
      await waitFor(() => a.supervisor.alarms.get("state:latches-write") === undefined, "alarm cleared");
    } finally {
      t.sim.inject({ leak: "rack-5", state: "dry" });
    }
    await waitFor(async () => (await a.commander.resetLeak(4)) === "accepted", "reset");
    await a.stop({ driveSafe: false, reason: "next test" });
  });

  it("saves a leak latched since the last supervisor pass before stop() returns", async () => {
    const dir = tempDir("podwarden-state-");
    const a = await start(dir);
    // no supervisor pass from here on: only the stop path can write the latch
    a.loop.supervise = (): void => undefined;
    t.sim.inject({ leak: "rack-7" });
    try {
      await waitFor(() => a.control.outputs()?.rackState[6] !== RACK_NORMAL, "latched in the control thread");
      expect(savedLatches(dir)).toBeNull();
      await a.stop({ driveSafe: true, reason: "SIGTERM" });
      expect(savedLatches(dir)).toEqual(["rack-7"]);
    } finally {
      t.sim.inject({ leak: "rack-7", state: "dry" });
    }
  });

  it("treats an oversized latch file as damaged: moved aside unparsed, with the Critical alarm", async () => {
    const dir = tempDir("podwarden-state-");
    writeFileSync(join(dir, "latches.json"), `{"racks":[],"pad":"${"x".repeat(2 * 1024 * 1024)}"}`);
    const c = await start(dir);
    await waitFor(() => c.supervisor.alarms.get("state:latches")?.severity === "Critical", "alarm");
    expect(c.supervisor.alarms.get("state:latches")?.message).toMatch(/larger than the 1048576-byte limit.*moved to/);
    await c.stop({ driveSafe: false, reason: "next test" });
  });

  it("starts anyway with a corrupt latch file: moves it aside and raises a Critical alarm that holds until acknowledged", async () => {
    writeFileSync(join(stateDir, "latches.json"), "{not json");
    const c = await start();
    await waitFor(() => c.supervisor.alarms.get("state:latches")?.severity === "Critical", "alarm");
    expect(c.supervisor.alarms.get("state:latches")?.message).toMatch(/moved to/);
    // the latches unknown: every rack with a leak input isolated until reset (issue #54)
    expect(c.status().racks.every((r) => r.isolation !== "Normal")).toBe(true);
    // a one-off event, not a condition: it outlives the alarm dwell until someone has seen it
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(c.supervisor.alarms.get("state:latches")).toBeDefined();
    expect(c.acknowledgeAlarm("state:latches", "test")).toBe(true);
    await waitFor(() => c.supervisor.alarms.get("state:latches") === undefined, "alarm cleared after acknowledgement");
  });
});
