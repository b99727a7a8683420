// Relay autotune and gains end to end: the agent with its real control worker and drivers against
// the simulator, driven the ways an engineer drives it (the CLI over the admin socket, signed
// commands through the executor, the HMI's actions), with its refusals, aborts, persistence
// across a restart, and reversal.
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../agent/agent.js";
import { executeCommand } from "../agent/commands/executor.js";
import { TUNE_EDGE_START } from "../agent/control/bank-inputs.js";
import { recordLayout } from "../agent/control/flight-ring.js";
import { replayRecording } from "../agent/recorder/flight-replay.js";
import { listRecordings, readRecording } from "../agent/recorder/recording-file.js";
import { validateAgentConfig, type AgentConfig } from "../agent/config/load.js";
import { Logs } from "../agent/log.js";
import { AdminSocket, type AdminPod } from "../agent/ops/admin-socket.js";
import type { AgentEvent, TuningStatus } from "../agent/pod-api.js";
import { PHASE_TOLERANCE_DEG } from "../agent/tuning/relay-analysis.js";
import { demoConfigData } from "../cli/demo-config.js";
import { gainsCommand, tuneCommand } from "../cli/tune-command.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("relay autotune and gains on a running agent", () => {
  let t: TestSim;
  let agent: Agent;
  let admin: AdminSocket;
  let stateDir: string;
  let config: AgentConfig;
  const events: AgentEvent[] = [];
  const start = async (): Promise<void> => {
    agent = new Agent({ config, hash: "tune-test-hash", path: "t" }, new Logs(config.log, { site: config.site, pod: config.pod }));
    agent.onEvent((e) => events.push(e));
    await agent.start();
    // the admin socket's face of this agent, as the planes give it (the reset and the recording
    // are the agent's commander's)
    const a = agent;
    const face: AdminPod = {
      status: () => a.status(),
      fieldPoints: () => a.fieldPoints(),
      modbusStats: () => a.modbusStats(),
      redfishStats: () => a.redfishStats(),
      layout: a.layout,
      get limits() {
        return a.limits;
      },
      execute: (b, by) => a.execute(b, by),
      audit: (r) => a.audit(r),
      recentRecordings: (n) => a.recentRecordings(n),
      resetLeak: (r) => a.commander.resetLeak(r),
      recordNow: (by) => a.commander.recordNow(by),
      scanBus: (bus, o) => a.field.modbus.scan(bus, o),
      config: a.config,
      configHash: a.configHash,
    };
    admin = new AdminSocket(() => face, join(stateDir, "admin.sock"));
    await admin.listen();
    await waitFor(() => agent.status().racks.every((r) => r.returnTempC !== null) && ["Running", "Degraded"].includes(agent.status().mode), "every rack read, the pod out of Starting", 30_000);
  };
  const stop = async (): Promise<void> => {
    await admin?.close();
    await agent?.stop({ driveSafe: false, reason: "test" });
  };

  beforeAll(async () => {
    t = await startTestSim();
    stateDir = tempDir("pw-tune-");
    const data = demoConfigData((d) => t.port(d));
    data.stateDir = stateDir;
    data.site = "tune-test";
    data.log = { level: "warn", modules: {} };
    data.control = { ...(data.control as object), schedFifo: false, warmupTicks: 2000, pumpLoop: { outRate: 0, autotune: { noiseS: 2 } }, rackLoop: { autotune: { noiseS: 1 } } };
    config = validateAgentConfig(data, "tune test");
    await start();
  }, 60_000);
  afterAll(async () => {
    await stop();
    await t?.stop();
    if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
  });

  const ok = async (command: "mode" | "tune" | "gains", params: Record<string, unknown>): Promise<unknown> => {
    const r = await executeCommand(agent.commander, { command, params }, "engineer-key");
    if (r.status !== "ok") throw new Error(`${command}: ${r.reason}`);
    return r.data;
  };
  const refused = async (command: "tune" | "gains", params: Record<string, unknown>): Promise<string> => {
    const r = await executeCommand(agent.commander, { command, params }, "engineer-key");
    if (r.status === "ok") throw new Error(`${command} was accepted`);
    return r.reason;
  };
  const tuning = (loop: string): TuningStatus | null => agent.commander.tuningStatus(agent.layout.loopIndex(loop)!);
  const pump = (): number => agent.layout.loopIndex("cdu.pump")!;

  let proposal: { kp: number; ki: number };
  it("tunes the pump loop from the CLI: the relay runs, and Ku, Pu and proposals come back", async () => {
    // the racks' valves held, so the pump's differential pressure answers to the pump alone (as an
    // engineer would tune it: a relay on the pump while the valves move measures the valves)
    for (let r = 1; r <= 8; r++) await ok("mode", { loop: `rack-${r}.valve`, mode: "Manual", outputPct: 60 });
    // the valves at 60 % first (a 10 s stroke): the pressure once looked settled while they still
    // moved, and went on moving past the tuning's deviation bound while it measured the noise
    // (a fresh clone's CI, 2026-12-07, aborted "the PV left the operating point")
    await waitFor(() => t.sim.truth().racks.every((r) => Math.abs(r.valvePct - 60) < 0.5), "the rack valves at 60 %", 60_000);
    // and the pressure steady at its setpoint for a second on end
    let steadySince: number | null = null;
    await waitFor(
      () => {
        const near = Math.abs((agent.status().pump.dpKpa ?? 0) - agent.status().pump.setpointKpa) < 5;
        steadySince = near ? (steadySince ?? performance.now()) : null;
        return steadySince !== null && performance.now() - steadySince >= 1000;
      },
      "the pump loop settled",
      60_000,
      50,
    );
    const lines: string[] = [];
    const rc = await tuneCommand({ loop: "cdu.pump", stateDir, log: (l) => lines.push(l), pollMs: 200, action: "start" });
    expect(rc, lines.join("\n")).toBe(0);
    const text = lines.join("\n");
    expect(text).toMatch(/cdu.pump: done/);
    expect(text).toMatch(/Ku [0-9.]+ .*Pu [0-9.]+ s/);
    expect(text).toMatch(/tyreus-luyben +kp/);
    expect(text).toMatch(/podwarden gains cdu.pump --rule/);
    const s = tuning("cdu.pump")!;
    expect(s.state).toBe("done");
    // a relay with the output free to follow it sits at the ultimate point, within what the
    // relay's hysteresis and a loaded machine's late samples move it: -148.6° in a loaded CI run
    // (2026-12-04, against the 30° first allowed), -147.1° on a quiet machine and -138.0° in a
    // fresh clone's CI run (2026-12-07; the hysteresis's own -175.4°)
    expect(s.result!.phaseDeg).toBeGreaterThan(-180 - 50);
    expect(s.result!.phaseDeg).toBeLessThan(-180 + 50);
    // no warning, but the tuner's own when the phase is off by more than its tolerance, as it then
    // must be (the loaded CI run's 31.4°). Off from the phase the relay's hysteresis gives, not
    // from -180°: judged against -180° the test wanted a warning for -146.9° where the tuner,
    // rightly, gave none (a CI run, 2026-12-06)
    const off = Math.abs(s.result!.phaseDeg - s.result!.expectedPhaseDeg) > PHASE_TOLERANCE_DEG;
    expect(s.result!.warnings, JSON.stringify(s.result)).toEqual(off ? [expect.stringMatching(/^the process's phase at the relay's period is/)] : []);
    proposal = s.result!.proposals.find((p) => p.rule === "tyreus-luyben")!;
    expect(events.some((e) => e.type === "tuning.started" && e.loop === "cdu.pump")).toBe(true);
    expect(events.some((e) => e.type === "tuning.ended" && e.loop === "cdu.pump" && e.state === "done")).toBe(true);
  }, 120_000);

  it("applies a proposal by signed command: saved first, then in the control thread's bank; a second tuning waits for the first", async () => {
    const data = (await ok("gains", { loop: "cdu.pump", rule: "tyreus-luyben" })) as { applied: { kp: number; rule: string } };
    expect(data.applied.kp).toBe(proposal.kp);
    const file = JSON.parse(readFileSync(join(stateDir, "gains.json"), "utf8")) as { loops: { loop: string; kp: number; ki: number; rule: string; by: string }[] };
    expect(file.loops).toEqual([expect.objectContaining({ loop: "cdu.pump", kp: proposal.kp, ki: proposal.ki, rule: "tyreus-luyben", by: "engineer-key" })]);
    expect(agent.control.bankSpec.loops[pump()].kp).toBe(proposal.kp);
    await waitFor(() => agent.control.patchApplied(), "the worker took the gains", 5000);
    // a rule the last tuning did not give, and a loop never tuned, are refused
    expect(await refused("gains", { loop: "rack-1.valve", rule: "simc" })).toMatch(/no finished tuning/);
    // one tuning at a time
    await ok("tune", { loop: "rack-1.valve", action: "start" });
    expect(await refused("tune", { loop: "rack-2.valve", action: "start" })).toMatch(/rack-1.valve is being tuned/);
    const lines: string[] = [];
    expect(await tuneCommand({ loop: "rack-1.valve", stateDir, log: (l) => lines.push(l), action: "abort" })).toBe(0);
    expect(lines.join("\n")).toMatch(/rack-1.valve: aborted \(aborted by local admin socket\)/);
    await waitFor(() => agent.activeAlarms().some((a) => a.id === "tune:rack-1.valve"), "the aborted tuning's alarm", 5000);
  }, 30_000);

  it("refuses a loop in Override, and ends a tuning when the loop's mode is changed", async () => {
    await ok("mode", { loop: "rack-2.valve", mode: "Override", outputPct: 50, leaseS: 60 });
    expect(await refused("tune", { loop: "rack-2.valve", action: "start" })).toMatch(/in Override: put it in Automatic or Manual first/);
    await ok("mode", { loop: "rack-2.valve", mode: "Manual", outputPct: 60 });
    await ok("tune", { loop: "rack-3.valve", action: "start" });
    await waitFor(() => tuning("rack-3.valve")?.state === "noise" || tuning("rack-3.valve")?.state === "relay", "rack-3's tuning running", 5000);
    await ok("mode", { loop: "rack-3.valve", mode: "Manual", outputPct: 55 });
    expect(tuning("rack-3.valve")).toMatchObject({ state: "aborted", reason: "the loop's mode was set to Manual" });
  }, 30_000);

  it("a leak anywhere in the pod ends a running tuning in the hot path, and a tuning is refused while it is latched", async () => {
    await ok("tune", { loop: "rack-4.valve", action: "start" });
    await waitFor(() => tuning("rack-4.valve")?.state === "noise" || tuning("rack-4.valve")?.state === "relay", "rack-4's tuning running", 5000);
    t.sim.inject({ leak: "rack-6", state: "wet" });
    await waitFor(() => tuning("rack-4.valve")?.state === "aborted", "the tuning aborted", 10_000);
    expect(tuning("rack-4.valve")!.reason).toMatch(/a leak, or a latched isolation, in the pod/);
    expect(await refused("tune", { loop: "rack-4.valve", action: "start" })).toMatch(/rack-6/);
    // the leak's flight recording holds the tuning's start and its end in the hot path, and
    // replays bit for bit
    const dir = join(stateDir, "recordings");
    const complete = () => listRecordings(dir).recordings.find((r) => r.header.complete && r.header.triggers.some((x) => x.reason === "alarm:leak:rack-6"));
    await waitFor(() => complete() !== undefined, "the leak's recording", 15_000);
    const rec = await readRecording(complete()!.file);
    const l = recordLayout(rec.header.sizes.points, rec.header.sizes.loops, rec.header.sizes.racks);
    const loop = agent.layout.loopIndex("rack-4.valve")!;
    let started = false;
    for (let k = 0; k < rec.window.count; k++) if (rec.window.i32[k * l.i32Width + l.i.tuneEdge + loop] === TUNE_EDGE_START) started = true;
    expect(started).toBe(true);
    const replay = replayRecording(rec);
    expect(replay.firstDifference).toBeNull();
  }, 40_000);

  it("keeps applied gains across a restart, and the CLI reverts them to the config's", async () => {
    await stop();
    await start();
    expect(agent.commander.loopGains(pump()).applied).toMatchObject({ kp: proposal.kp, ki: proposal.ki, rule: "tyreus-luyben" });
    expect(agent.control.bankSpec.loops[pump()].kp).toBe(proposal.kp);
    // a reload in place (SIGHUP, the same structure) keeps them too
    agent.applyTuning(validateAgentConfig(JSON.parse(JSON.stringify(config)) as unknown, "reloaded"));
    expect(agent.control.bankSpec.loops[pump()].kp).toBe(proposal.kp);
    const lines: string[] = [];
    expect(await gainsCommand({ loop: "cdu.pump", stateDir, log: (l) => lines.push(l), revert: true })).toBe(0);
    expect(lines.join("\n")).toMatch(/running on the config's gains/);
    expect(agent.control.bankSpec.loops[pump()].kp).toBe(config.control.pumpLoop.kp);
    expect(existsSync(join(stateDir, "gains.json"))).toBe(true);
    expect((JSON.parse(readFileSync(join(stateDir, "gains.json"), "utf8")) as { loops: unknown[] }).loops).toEqual([]);
  }, 90_000);

  it("refuses gains outside the loop's gain limits, by hand or by a command, and changes nothing (issue #54: 0 and 1e6 were taken)", async () => {
    const before = agent.commander.loopGains(pump()).applied;
    const lim = config.control.pumpLoop.autotune.gainLimits;
    expect(await refused("gains", { loop: "cdu.pump", kp: 0, ki: 0.1 })).toMatch(/kp 0 is outside \[[\d.]+, [\d.]+\] \(kp must be above 0\): refused \(control\.pumpLoop\.autotune\.gainLimits\)/);
    expect(await refused("gains", { loop: "cdu.pump", kp: 1e6, ki: 1e6, kd: 1e6 })).toMatch(/kp 1000000 is outside.*; ki 1000000 is outside \[0, [\d.]+\]; kd 1000000 is outside/);
    expect(await refused("gains", { loop: "cdu.pump", kp: lim.kpMax * 1.01, ki: 0 })).toMatch(/kp [\d.]+ is outside/);
    expect(agent.commander.loopGains(pump()).applied).toEqual(before);
    // at its edge, taken
    await ok("gains", { loop: "cdu.pump", kp: lim.kpMax, ki: lim.kiMax });
    expect(agent.commander.loopGains(pump()).applied).toMatchObject({ kp: lim.kpMax, ki: lim.kiMax });
    const lines: string[] = [];
    expect(await gainsCommand({ loop: "cdu.pump", stateDir, log: (l) => lines.push(l), revert: true })).toBe(0);
  });

  it("refuses gains it cannot save, with an alarm, and changes nothing", async () => {
    // every write goes through gains.json.bg.tmp: a directory in its place makes each one fail
    mkdirSync(join(stateDir, "gains.json.bg.tmp"));
    try {
      expect(await refused("gains", { loop: "cdu.pump", kp: 1, ki: 1 })).toMatch(/cannot be saved, so they are refused and nothing changed/);
      expect(agent.control.bankSpec.loops[pump()].kp).toBe(config.control.pumpLoop.kp);
      expect(agent.commander.loopGains(pump()).applied).toBeNull();
      await waitFor(() => agent.activeAlarms().some((a) => a.id === "state:gains-write"), "the alarm", 5000);
    } finally {
      rmSync(join(stateDir, "gains.json.bg.tmp"), { recursive: true });
    }
  });
});
