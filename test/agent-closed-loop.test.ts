// The agent end to end against the simulator over real Modbus TCP, ground truth from the
// simulator: steady-state control, a leak, a device going offline. One pod for the whole file
// (settling takes a minute of real time); each test leaves the others' racks alone.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { executeCommand } from "../agent/commands/executor.js";
import type { CommandBody } from "../agent/commands/schema.js";
import * as L from "../hotpath-as/assembly/layout.js";
import type { Agent } from "../agent/agent.js";
import { readReturnTempsThroughTransmitters } from "../cli/demo-config.js";
import { pointReports } from "../agent/uplink/telemetry.js";
import { agentConfig, demoConfigFor, testAgent, type LogCapture } from "./helpers/agent.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";

describe("agent against the simulated pod", () => {
  let t: TestSim;
  let agent: Agent;
  let logs: LogCapture;
  const events: string[] = [];

  beforeAll(async () => {
    t = await startTestSim({ plant: { load: { profile: "idle", pct: 70 } }, devices: { leaseMs: 3000 } });
    ({ agent, logs } = testAgent(
      agentConfig(
        demoConfigFor(t.sim, (d) => {
          readReturnTempsThroughTransmitters(d, (rack) => rack === "rack-6");
          // 8 s to prove an isolation instead of 15: twice the 4 s stroke, and the two tests that
          // wait for an unproven isolation's escalation wait 7 s less each (npm test's 15 minutes)
          const control = (d.control ?? {}) as { isolation?: object };
          d.control = { ...control, isolation: { ...control.isolation, deadlineMs: 8000 } };
        }),
      ),
    ));
    agent.onEvent((e) => events.push(e.type));
    await agent.start();
  }, 30_000);
  afterAll(async () => {
    await agent?.stop({ driveSafe: true, reason: "test end" });
    await t.stop();
  });

  const truth = (): ReturnType<TestSim["sim"]["truth"]> => t.sim.truth();

  it("puts every actuator in its safe state first, then holds every return temperature within ±0.5 °C", async () => {
    // before valid data the rack loops are in fail-safe: valves commanded fully open
    await waitFor(() => truth().racks.every((r) => r.valveCommandPct === 100), "fail-safe open at start", 10_000);
    // Running means no alarm listed at all: on a timeout, say which ones held it back. A cold
    // start misses more deadlines (JIT, page faults: 1.2 % of the first 10.9 s in a CI run), and
    // control:overrun clears only once those leave its 10 s window, plus the clear dwell
    await waitFor(() => agent.supervisor.mode === "Running", "Running", 60_000).catch((e: unknown) => {
      throw new Error(`${String(e)}: ${agent.supervisor.mode}, ${agent.activeAlarms().map((a) => `${a.id} (${a.message})`).join("; ")}`);
    });
    // settle, then hold: 5 s of samples all within the band (the racks' thermal time constants
    // are seconds: a loop that drifts or rings leaves the band within that; the 15-minute suite
    // budget took the other 5 s)
    await waitFor(() => truth().racks.every((r) => Math.abs(r.returnTempC - 45) < 0.3), "settled", 120_000, 200);
    let worst = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < 5_000) {
      for (const r of truth().racks) worst = Math.max(worst, Math.abs(r.returnTempC - 45));
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(worst, "worst |return − setpoint| over 5 s, °C").toBeLessThan(0.5);
    expect(truth().devices.every((d) => !d.leaseExpired)).toBe(true);
    // Missed deadlines are a timing figure, measured by `npm run bench` (tick lateness beside
    // cyclictest, BENCHMARKS.md), not asserted here: this file's control thread shares two cores
    // with the whole suite, and a bound on its overruns failed a CI run at 1.4 % of ticks (287 of
    // 20,035) with the command fuzzer beside it, and passed the run before.
  }, 180_000);

  it("isolates a leaking rack, proves it, raises the alarm, and the other racks keep control", async () => {
    // the valve's output in control, before the leak (a read that a tick keeps tearing is given up
    // after 2 ms: on a loaded CI run the first one came back empty)
    let before = NaN;
    await waitFor(() => {
      const o = agent.control.outputs();
      if (o !== undefined) before = o.loopOut[2];
      return o !== undefined;
    }, "the control worker's outputs read");
    t.sim.inject({ leak: "rack-3" });
    await waitFor(() => truth().racks[2].supplyIsolationPct === 0 && truth().racks[2].returnIsolationPct === 0, "isolation valves closed", 10_000);
    await waitFor(() => agent.status().racks[2].isolation === "Isolated", "isolation proven", 10_000);
    expect(truth().racks[2].flowLpm).toBe(0);
    expect(truth().racks[2].valveCommandPct).toBe(10); // control valve to its leak-safe value (closed = outMin)
    const alarm = agent.supervisor.alarms.get("leak:rack-3");
    expect(alarm?.severity).toBe("Critical");
    // the status reads Isolated as the proof holds; the event is emitted on the supervisor's next
    // pass (a CI run under load checked it in between): wait for it, a bounded while
    await waitFor(() => events.includes("isolation.proven"), "the isolation.proven event", 5_000);
    const lost = truth().racks[2].coolantLostL;
    await new Promise((r) => setTimeout(r, 2000));
    expect(truth().racks[2].coolantLostL).toBe(lost); // nothing leaks once isolated
    for (const r of truth().racks) if (r.name !== "rack-3") expect(Math.abs(r.returnTempC - 45)).toBeLessThan(1.5);
    expect(agent.status().racks.filter((r) => r.name !== "rack-3").every((r) => r.loopStatus & L.LS_AUTOMATIC)).toBe(true);
    // the latch holds after the leak dries, until an authorised reset; a reset while wet is refused
    expect(await agent.commander.resetLeak(2)).toBe("refused-wet");
    t.sim.inject({ leak: "rack-3", state: "dry" });
    await new Promise((r) => setTimeout(r, 500));
    expect(agent.status().racks[2].isolation).toBe("Isolated");
    const overtemp: string[] = [];
    const stopWatching = agent.onEvent((e) => {
      if (e.type === "alarm.raised" && e.alarm.id === "overtemp:rack-3") overtemp.push(e.alarm.severity);
    });
    // power comes back with the coolant: never drawn while the flow is below the loss-of-flow minimum
    const minLpm = agent.config.supervisor.lossOfFlow.minLpm;
    let poweredDry = 0;
    const watch = setInterval(() => {
      const r = truth().racks[2];
      if (r.powerKw > 1 && r.flowLpm < minLpm) poweredDry++;
    }, 20);
    expect(await agent.commander.resetLeak(2)).toBe("accepted");
    await waitFor(() => truth().racks[2].supplyIsolationPct === 100, "back in service", 10_000);
    // bumpless: the valve ramps from its leak-safe value back to the output it had in control
    // (the loop resumes there, not from closed), and the rack returns to its setpoint without
    // an over-temperature alarm on the way
    await waitFor(() => Math.abs(agent.control.outputs()!.loopOut[2] - before) < 5, "valve back near its output before the leak", 20_000);
    await waitFor(() => Math.abs(truth().racks[2].returnTempC - 45) < 0.5, "rack-3 back at its setpoint", 60_000, 100);
    stopWatching();
    clearInterval(watch);
    expect(poweredDry, "samples with the rack's power on and its flow below the minimum").toBe(0);
    expect(overtemp).toEqual([]);
    await waitFor(() => agent.supervisor.alarms.get("leak:rack-3") === undefined, "alarm cleared", 15_000);
  }, 120_000);

  it("fails a device's loops safe when it goes offline, and recovers when it returns", async () => {
    t.sim.inject({ device: "rack-5", offline: true });
    // samples stop: the hot path's stale check (3 s) fails the loop safe; the device meanwhile
    // gets no heartbeat either, and its own lease (3 s) opens its valve too
    await waitFor(() => (agent.status().racks[4].loopStatus & L.LS_INTERLOCK_FAILSAFE) !== 0, "loop fail-safe", 10_000);
    expect(agent.status().racks[4].loopStatus & L.LS_PV_BAD).toBeTruthy();
    // the alarm names the input and why: the hot path's verdict, then what the driver saw
    await waitFor(() => /PV input bad \(rack-5\.returnTempC: [^;]*stale, (timeout|offline|disconnected)\)/.test(agent.supervisor.alarms.get("failsafe:rack-5.valve")?.message ?? ""), "alarm names the input");
    await waitFor(() => agent.supervisor.alarms.get("device:rack-5") !== undefined, "device alarm", 10_000);
    expect(agent.supervisor.mode).toBe("Degraded");
    // the last values read before the device went away are not passed off as measurements
    expect(agent.status().racks[4]).toMatchObject({ returnTempC: null, flowLpm: null, powerKw: null });
    expect(pointReports(agent.fieldPoints())["rack-5.returnTempC"]).toMatchObject({ value: null, quality: expect.not.stringMatching(/^good$/) as unknown });
    t.sim.inject({ device: "rack-5", offline: false });
    await waitFor(() => (agent.status().racks[4].loopStatus & L.LS_AUTOMATIC) !== 0, "back in automatic", 20_000);
    await waitFor(() => agent.supervisor.alarms.get("device:rack-5") === undefined, "device alarm cleared", 20_000);
  }, 60_000);

  it("fails a loop safe on a 4–20 mA failure current, says what the current was, and recovers", async () => {
    t.sim.inject({ sensor: "rack-6.returnTempMa", fault: "value", value: 0 });
    await waitFor(() => (agent.status().racks[5].loopStatus & L.LS_INTERLOCK_FAILSAFE) !== 0, "loop fail-safe", 10_000);
    await waitFor(() => agent.supervisor.alarms.get("failsafe:rack-6.valve") !== undefined, "fail-safe alarm");
    expect(agent.supervisor.alarms.get("failsafe:rack-6.valve")?.message).toMatch(/PV input bad \(rack-6\.returnTempTx: no usable value, invalid \(loop current 0\.00 mA, below 3\.6 mA: a broken loop/);
    // telemetry carries the failure current beside the missing value
    const tx = pointReports(agent.fieldPoints())["rack-6.returnTempTx"];
    expect(tx).toMatchObject({ value: null, quality: "invalid", loopCurrentMa: 0 });
    expect(tx.detail).toMatch(/below 3\.6 mA/);
    t.sim.inject({ sensor: "rack-6.returnTempMa", fault: "clear" });
    await waitFor(() => (agent.status().racks[5].loopStatus & L.LS_AUTOMATIC) !== 0, "back in automatic", 20_000);
    const good = pointReports(agent.fieldPoints())["rack-6.returnTempTx"];
    expect(good.quality).toBe("good");
    expect(good.loopCurrentMa).toBeGreaterThan(4);
    expect(good.loopCurrentMa).toBeLessThan(20);
    expect(good.detail).toBeUndefined();
  }, 60_000);

  it("reports a reading that is not good as null, never its sentinel or its last value", async () => {
    // the transmitter says "no valid reading" with its sentinel raw value (-32768, -327.68 °C scaled)
    t.sim.inject({ sensor: "rack-3.supplyTempC", fault: "nan" });
    await waitFor(() => agent.fieldPoints().find((p) => p.id === "rack-3.supplyTempC")?.quality === "invalid", "the point invalid", 10_000);
    expect(agent.status().racks[2].supplyTempC).toBeNull();
    expect(pointReports(agent.fieldPoints())["rack-3.supplyTempC"]).toMatchObject({ value: null, quality: "invalid" });
    // the other racks' readings are untouched
    expect(agent.status().racks[3].supplyTempC).toEqual(expect.any(Number));
    t.sim.inject({ sensor: "rack-3.supplyTempC", fault: "clear" });
    await waitFor(() => agent.status().racks[2].supplyTempC !== null, "the reading back", 10_000);
    expect(agent.status().racks[2].supplyTempC).toBeGreaterThan(0);
  }, 30_000);

  it("raises its own alarm for a failed flow meter, and a leak then reports its isolation unprovable, not flow that did not stop", async () => {
    t.sim.inject({ sensor: "rack-4.flowLpm", fault: "nan" });
    await waitFor(() => agent.supervisor.alarms.get("flow-meter:rack-4") !== undefined, "flow-meter alarm", 10_000);
    expect(agent.supervisor.alarms.get("flow-meter:rack-4")?.severity).toBe("Warning");
    t.sim.inject({ leak: "rack-4" });
    await waitFor(() => agent.supervisor.alarms.get("isolation-failed:rack-4") !== undefined, "isolation unproven", 20_000);
    expect(truth().racks[3].flowLpm).toBe(0); // the valves did close: only the proof is missing
    expect(agent.supervisor.alarms.get("isolation-failed:rack-4")?.message).toMatch(/not proven: the flow meter has no good reading \(rack-4\.flowLpm: .*invalid/);
    expect(agent.supervisor.alarms.get("flow-meter:rack-4")?.severity).toBe("Critical");
    t.sim.inject({ sensor: "rack-4.flowLpm", fault: "clear" });
    t.sim.inject({ leak: "rack-4", state: "dry" });
    await waitFor(async () => (await agent.commander.resetLeak(3)) === "accepted", "reset accepted", 10_000, 200);
    await waitFor(() => truth().racks[3].supplyIsolationPct === 100, "back in service", 10_000);
    await waitFor(() => agent.supervisor.alarms.get("flow-meter:rack-4") === undefined, "flow-meter alarm cleared", 15_000);
  }, 60_000);

  it("an operator's isolation: refused while the rack's load cannot be shown off, proven by its flow meter, alarmed when flow does not stop", async () => {
    const cmd = (command: string, rack: string): CommandBody => ({ command, params: { rack }, transaction: "t", pod: "x", seq: 1, issuedAt: "", expiresAt: "" }) as unknown as CommandBody;
    // a loaded rack: refused, nothing moves
    expect(await executeCommand(agent.commander, cmd("isolate-rack", "rack-5"), "test")).toMatchObject({ status: "rejected", code: "refused", reason: expect.stringMatching(/rack-5 draws \d+\.\d kW, above the 2 kW/) as unknown });
    // an unloaded rack whose power meter has no good reading: refused too, naming the meter
    t.sim.inject({ load: "rack-5", pct: 0 });
    t.sim.inject({ sensor: "rack-5.powerKw", fault: "nan" });
    await waitFor(() => agent.commander.rackLoad(4).drawKw === null, "power meter bad", 10_000);
    expect(await executeCommand(agent.commander, cmd("isolate-rack", "rack-5"), "test")).toMatchObject({ status: "rejected", code: "refused", reason: expect.stringMatching(/rack-5's power meter has no good reading \(rack-5\.powerKw: .*\): its load cannot be shown to be off/) as unknown });
    expect(truth().racks[4].supplyIsolationPct).toBe(100);
    t.sim.inject({ sensor: "rack-5.powerKw", fault: "clear" });
    await waitFor(() => (agent.commander.rackLoad(4).drawKw ?? 99) <= agent.commander.rackLoad(4).limitKw, "rack-5 unloaded", 10_000);
    // the flow meter lies: it still reads 30 L/min after the valves have shut
    t.sim.inject({ sensor: "rack-5.flowLpm", fault: "value", value: 30 });
    expect(await executeCommand(agent.commander, cmd("isolate-rack", "rack-5"), "test")).toMatchObject({ status: "ok" });
    await waitFor(() => truth().racks[4].supplyIsolationPct === 0 && truth().racks[4].flowLpm === 0, "rack-5 isolated", 10_000);
    await waitFor(() => agent.supervisor.alarms.get("isolation-failed:rack-5") !== undefined, "isolation unproven", 30_000);
    expect(agent.supervisor.alarms.get("isolation-failed:rack-5")).toMatchObject({ severity: "Critical", message: expect.stringMatching(/operator isolation of rack-5 not proven after 8 s: flow has not stopped \(30\.0 L\/min\)/) as unknown });
    expect(agent.status().racks[4].powerOffRequested).toBe(true); // its power followed its coolant
    t.sim.inject({ sensor: "rack-5.flowLpm", fault: "clear" });
    expect(await executeCommand(agent.commander, cmd("return-rack", "rack-5"), "test")).toMatchObject({ status: "ok" });
    await waitFor(() => truth().racks[4].supplyIsolationPct === 100, "rack-5 back in service", 10_000);
    t.sim.inject({ load: "rack-5", pct: 70 });
    await waitFor(() => agent.supervisor.alarms.get("isolation-failed:rack-5") === undefined, "alarm cleared", 15_000);
  }, 90_000);

  it("logs JSON lines with a module per line", () => {
    expect(logs.lines.length).toBeGreaterThan(5);
    expect(logs.lines.every((l) => typeof l.module === "string" && typeof l.time === "string")).toBe(true);
    expect(logs.lines.some((l) => l.msg === "alarm.raised")).toBe(true);
  });
});
