// The flight recorder end to end: the agent with its real control worker and drivers against the
// simulator. A leak in the plant produces a recording whose pre-trigger window shows the leak
// sample arriving and the isolation commanded by the tick that took it; replayed through the hot
// path the recording comes out bit for bit; replayed with a config that would not have tripped,
// it says so; an operator's recording, the CSV export, rotation, and a damaged file.
import { readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as L from "../hotpath-as/assembly/layout.js";
import { Agent } from "../agent/agent.js";
import { validateAgentConfig } from "../agent/config/load.js";
import { recordLayout } from "../agent/control/flight-ring.js";
import { Logs } from "../agent/log.js";
import { replayRecording } from "../agent/recorder/flight-replay.js";
import { loadHilScenario } from "../hil/scenario.js";
import { runReplay } from "../hil/replay-runner.js";
import type { BankViews } from "../hotpath-as/views.js";
import { podBankSpec } from "../pod/bank.js";
import { podLayout } from "../pod/layout.js";
import { recordingCsv } from "../agent/recorder/recording-csv.js";
import { listRecordings, readRecording, type Recording } from "../agent/recorder/recording-file.js";
import { executeCommand } from "../agent/commands/executor.js";
import { HmiServer } from "../agent/hmi/server.js";
import { demoConfigData } from "../cli/demo-config.js";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";
import { virtualLoopPod } from "../pod/virtual-loop.js";
import { leaseFailWrites } from "../pod/fail-safe.js";

describe("the flight recorder", () => {
  let t: TestSim;
  let agent: Agent;
  let stateDir: string;
  let config: ReturnType<typeof validateAgentConfig>;
  let data: Record<string, unknown>;
  const dir = (): string => join(stateDir, "recordings");
  const complete = (): Recording["header"][] => listRecordings(dir()).recordings.map((r) => r.header).filter((h) => h.complete);

  beforeAll(async () => {
    t = await startTestSim();
    stateDir = tempDir("pw-recorder-");
    data = demoConfigData((d) => t.port(d));
    data.stateDir = stateDir;
    data.site = "recorder-test";
    data.log = { level: "warn", modules: {} };
    data.control = { ...(data.control as object), schedFifo: false, warmupTicks: 2000 };
    data.recorder = { preS: 2, postS: 0.5, maxFiles: 3 };
    config = validateAgentConfig(data, "recorder test");
    agent = new Agent({ config, hash: "recorder-test-hash", path: "t" }, new Logs(config.log, { site: config.site, pod: config.pod }));
    await agent.start();
    await waitFor(() => agent.status().racks.every((r) => r.returnTempC !== null), "every rack read", 20_000);
    // a full pre-trigger window of history, so the checkpoint lies before it
    await new Promise((r) => setTimeout(r, 3500));
  }, 40_000);
  afterAll(async () => {
    await agent?.stop({ driveSafe: false, reason: "test end" });
    await t?.stop();
    if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
  });

  let leak: Recording;
  let leakFile: string;
  it("records a leak: the pre-trigger window holds the leak sample arriving, and the isolation from the tick that took it", async () => {
    t.sim.inject({ leak: "rack-3", state: "wet" });
    await waitFor(() => complete().some((h) => h.triggers.some((x) => x.reason === "alarm:leak:rack-3")), "a complete recording of rack-3's leak", 15_000);
    // (another trip just before, an overrun burst on a loaded machine, may have opened the
    // recording the leak joined: its trigger is then not the first)
    const entry = listRecordings(dir()).recordings.find((r) => r.header.complete && r.header.triggers.some((x) => x.reason === "alarm:leak:rack-3"))!;
    leakFile = entry.file;
    leak = await readRecording(entry.file);
    const h = leak.header;
    expect(h).toMatchObject({ site: "recorder-test", configHash: "recorder-test-hash", decimation: 1, complete: true });
    expect(h.build.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(h.count).toBeGreaterThanOrEqual(2000 + 500);
    const l = recordLayout(h.sizes.points, h.sizes.loops, h.sizes.racks);
    const rack = h.names.racks.indexOf("rack-3");
    const leakPoint = h.names.points.indexOf("rack-3.leakState");
    expect(leakPoint).toBeGreaterThanOrEqual(0);
    const w = leak.window;
    const value = (k: number): number => w.f64[k * l.f64Width + l.f.value + leakPoint];
    const state = (k: number): number => w.i32[k * l.i32Width + l.i.rackState + rack];
    const supply = (k: number): number => w.i32[k * l.i32Width + l.i.supplyOpen + rack];
    const arrived = Array.from({ length: w.count }, (_, k) => k).find((k) => value(k) === 1)!;
    expect(arrived).toBeGreaterThan(0);
    // before the trigger: the alarm is raised by the supervisor after the isolation
    expect(w.firstSeq + arrived).toBeLessThan(h.triggers.find((x) => x.reason === "alarm:leak:rack-3")!.seq);
    expect(value(arrived - 1)).toBe(0);
    expect([state(arrived - 1), supply(arrived - 1)]).toEqual([L.RACK_NORMAL, 1]);
    // the tick that took the wet sample isolated the rack and commanded its valves closed
    expect(state(arrived)).toBe(L.RACK_ISOLATING);
    expect(supply(arrived)).toBe(0);
    // the other racks kept their coolant throughout
    for (let k = 0; k < w.count; k++) expect(w.i32[k * l.i32Width + l.i.supplyOpen + 0]).toBe(1);
  }, 30_000);

  it("replays the leak through the hot path bit for bit, and tells when a changed config would not have tripped", () => {
    const same = replayRecording(leak);
    expect(same.firstDifference).toBeNull();
    expect(same.identical).toBe(true);
    expect(same.ticks).toBeGreaterThan(2000);
    expect(same.sameTrips).toBe(true);
    const r3 = same.replayed.find((x) => x.rack === "rack-3")!;
    expect(r3.isolated).not.toBeNull();
    expect(r3.supplyClosed).toEqual(same.recorded.find((x) => x.rack === "rack-3")!.supplyClosed);

    // into the virtual pod: the samples through the wiring by point id, the writes on the daemon's schedule
    const pod = virtualLoopPod(config);
    const wired = replayRecording(leak, { pod });
    expect(wired.firstDifference).toBeNull();
    expect(wired.identical).toBe(true);
    const w3 = wired.replayed.find((x) => x.rack === "rack-3")!;
    // the isolation was written in the pass right after the tick that decided it
    expect(w3.isolationWritten).toEqual(w3.supplyClosed);
    const rack3 = config.racks[2];
    const pass = wired.writes.filter((x) => x.seq === w3.isolationWritten!.seq);
    // isolation valves first, then the rack's power (its coolant is gone), as the daemon writes them
    expect(pass.slice(0, 2)).toEqual([
      { seq: w3.isolationWritten!.seq, tickMs: w3.isolationWritten!.tickMs, id: rack3.outputs.supplyIsolation, value: 0 },
      { seq: w3.isolationWritten!.seq, tickMs: w3.isolationWritten!.tickMs, id: rack3.outputs.returnIsolation, value: 0 },
    ]);
    expect(rack3.noCoolant.action).toBe("power-off");
    expect(pass.find((x) => x.id === rack3.outputs.powerOff)?.value).toBe(1);
    expect(wired.initialWrites[rack3.outputs.supplyIsolation]).toBe(1);
    // the devices' lease fail positions go out at the first pass, as the daemon's do (the
    // replay's own loop wrote none before the three virtual-time loops became one)
    const leaseFail = leaseFailWrites(config);
    expect(leaseFail.length).toBeGreaterThan(0);
    for (const f of leaseFail) expect(wired.initialWrites[f.id], f.id).toBe(f.value);
    // no other rack's isolation was written closed
    expect(wired.replayed.filter((x) => x.isolationWritten !== null).map((x) => x.rack)).toEqual(["rack-3"]);
    // a config that does not wire the recorded points is refused, not replayed wrong
    const renamed = structuredClone(pod);
    renamed.racks[2].points.returnTempC = "rack-3.elsewhere";
    expect(() => replayRecording(leak, { pod: renamed })).toThrow(/does not wire the recorded points rack-3\.returnTempC/);

    // a leak debounce far longer than the window: this config would not have isolated rack-3
    const spec = structuredClone(leak.header.spec);
    for (const p of spec.points) if (p.kind === "leak") p.debounceFault = 100_000;
    const changed = replayRecording(leak, { spec });
    expect(changed.sameTrips).toBe(false);
    expect(changed.replayed.find((x) => x.rack === "rack-3")!.isolated).toBeNull();
    expect(changed.identical).toBe(false);
  });

  it("is a HIL scenario's input: the recorded leak, replayed with this build, judged against expectations; a config that would not isolate fails them", () => {
    const yaml = [
      "name: recorded-leak",
      `replay: ${leakFile}`,
      "expect:",
      "  - name: rack-3's isolation valves written shut within 5 ms of its leak reading",
      "    signals: [writes.rack-3.supplyIsolationOpen, writes.rack-3.returnIsolationOpen]",
      "    is: { eq: 0 }",
      "    within: 5ms",
      "    after: { signal: pod.rack-3.leak, is: { eq: 1 } }",
      "  - name: no other rack isolated",
      "    signal: pod.*.isolated",
      "    except: [rack-3]",
      "    is: { eq: 1 }",
      "    never: {}",
    ].join("\n");
    const file = join(stateDir, "recorded-leak.yaml");
    writeFileSync(file, yaml);
    const scenario = loadHilScenario(file);
    const source = (c: typeof config) => ({
      ticks: leak.header.count,
      run: (onTick: (tickMs: number, v: BankViews) => void) =>
        replayRecording(leak, { spec: podBankSpec(c.control, podLayout(c), c.racks), pod: virtualLoopPod(c), onTick }),
    });
    const r = runReplay(scenario, config, source(config));
    expect(r.identical).toBe(true);
    expect(r.verdicts.map((v) => [v.passed, v.figure])).toEqual([
      [true, expect.stringMatching(/^= 0 in 0 s after pod\.rack-3\.leak = 1 \(at [\d.]+ s\) \(limit 5\.0 ms\)$/)],
      [true, expect.stringMatching(/^never = 1/)],
    ]);
    // a config whose leak debounce outlasts the recording: the same recording, the build fails it
    const slow = validateAgentConfig({ ...structuredClone(data), control: { ...(data.control as object), points: { leak: { debounceFault: 100_000 } } } }, "slow leak");
    const broken = runReplay(scenario, slow, source(slow));
    expect(broken.identical).toBe(false);
    expect(broken.passed).toBe(false);
    expect(broken.verdicts[0].figure).toMatch(/its reference, pod\.rack-3\.leak = 1, never happened/);
    // a replay has no plant: a truth signal is refused before anything runs
    writeFileSync(file, yaml.replace("writes.rack-3.supplyIsolationOpen, writes.rack-3.returnIsolationOpen", "truth.rack-3.supplyIsolationPct"));
    expect(() => loadHilScenario(file)).toThrow(/a replay has no plant, so no truth\.rack-3\.supplyIsolationPct/);
  });

  it("exports a recording as CSV, one row per tick, every point, loop and rack named", () => {
    const lines = [...recordingCsv(leak)];
    expect(lines).toHaveLength(leak.header.count + 1);
    const head = lines[0].trim().split(",");
    expect(head.slice(0, 5)).toEqual(["seq", "t_ms", "tick_ms", "dt_s", "flags"]);
    expect(head).toContain("rack-3.leakState");
    expect(head).toContain("rack-3.valve.out");
    expect(head).toContain("rack-3.supplyOpen");
    const cols = lines[1].trim().split(",");
    expect(cols).toHaveLength(head.length);
    // t_ms is relative to the trigger: negative before it
    expect(Number(cols[1])).toBeLessThan(0);
  });

  it("records on an operator's request, by signed command too, joining triggers into one open recording", async () => {
    t.sim.inject({ clear: "all" });
    await waitFor(() => agent.recorder.dir !== undefined && complete().length >= 1, "the leak recording written", 5000);
    const before = complete().length;
    const out = await executeCommand(agent.commander, { command: "record", params: {} }, "ops-key");
    expect(out.status).toBe("ok");
    const id = (out as { data: { recording: string } }).data.recording;
    // a second trigger while the first is open joins it
    expect(agent.commander.recordNow("operator at the HMI")).toBe(id);
    await waitFor(() => complete().length > before, "the operator's recording complete", 10_000);
    const h = complete().find((x) => x.id === id)!;
    expect(h.triggers.map((x) => x.reason)).toEqual(["operator:ops-key", "operator:operator at the HMI"]);
  }, 20_000);

  it("keeps the newest maxFiles recordings", async () => {
    for (let k = 0; k < 3; k++) {
      const id = agent.commander.recordNow(`rotation ${k}`);
      await waitFor(() => complete().some((h) => h.id === id), `recording ${id} complete`, 10_000);
      await agent.recorder.flushed();
    }
    const kept = listRecordings(dir()).recordings;
    const ids = kept.map((r) => r.id);
    expect(ids).toHaveLength(3);
    expect(ids.at(-1)).toMatch(/operator-rotation-2$/);
    // the leak's recording is evidence: the operators' went before it (issue #54)
    expect(kept.some((r) => r.header.triggers.some((x) => x.reason === "alarm:leak:rack-3")), JSON.stringify(kept.map((r) => r.header.triggers.map((x) => x.reason)))).toBe(true);
  }, 40_000);

  it("serves the recordings to the HMI: their summaries, and each as CSV", async () => {
    const hmi = new HmiServer({ pod: () => agent, commander: () => agent, recordingsDir: () => agent.recorder.dir, config: { ...agent.config.hmi, port: 0 }, version: "test" });
    const port = await hmi.listen();
    try {
      const list = (await (await fetch(`http://127.0.0.1:${port}/api/recordings`)).json()) as { recordings: { id: string; ticks: number; triggers: string[] }[] };
      expect(list.recordings.length).toBe(3);
      const newest = list.recordings[0];
      expect(newest.triggers).toEqual(["operator:rotation 2"]);
      const csv = await fetch(`http://127.0.0.1:${port}/api/recording.csv?id=${newest.id}`);
      expect(csv.status).toBe(200);
      expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
      expect((await csv.text()).trim().split("\n")).toHaveLength(newest.ticks + 1);
      const bad = await fetch(`http://127.0.0.1:${port}/api/recording.csv?id=../../etc/passwd`);
      expect(bad.status).toBe(400);
      const none = await fetch(`http://127.0.0.1:${port}/api/recording.csv?id=20000101T000000000Z-none`);
      expect(none.status).toBe(404);
      expect(((await none.json()) as { error: string }).error).toMatch(/^no recording "20000101T000000000Z-none" in <recordings>$/);
    } finally {
      await hmi.close();
    }
  });

  it("takes a storm of triggers into one recording, listing the first hundred", async () => {
    const ids = new Set(Array.from({ length: 150 }, (_, k) => agent.commander.recordNow(`storm ${k}`)));
    expect(ids.size).toBe(1);
    const [id] = ids;
    await waitFor(() => complete().some((h) => h.id === id), `recording ${id} complete`, 10_000);
    await agent.recorder.flushed();
    const h = complete().find((x) => x.id === id)!;
    expect(h.triggers).toHaveLength(100);
    expect(h.triggers.at(-1)!.reason).toBe("operator:storm 99");
  }, 20_000);

  it("refuses an operator's recording, saying why, when the recorder is off", async () => {
    data = demoConfigData((d) => t.port(d));
    data.recorder = { enabled: false };
    const config = validateAgentConfig(data, "recorder off");
    // never started: nothing connects, and the refusal needs none of it
    const off = new Agent({ config, hash: "off", path: "t" }, new Logs(config.log, { site: "off", pod: "off" }, { write: () => true }));
    expect(() => off.commander.recordNow("ops")).toThrow(/the flight recorder is off/);
    const out = await executeCommand(off.commander, { command: "record", params: {} }, "ops");
    expect(out).toMatchObject({ status: "rejected", code: "refused" });
    expect((out as { reason: string }).reason).toMatch(/recorder is off/);
    expect(off.recentRecordings(5)).toEqual([]);
  });

  it("refuses a damaged recording with a clear error, and lists it as unreadable", async () => {
    const file = listRecordings(dir()).recordings[0].file;
    const copy = join(stateDir, "recordings", "00000000T000000000Z-damaged.pwrec");
    writeFileSync(copy, readFileSync(file));
    truncateSync(copy, 100_000);
    await expect(readRecording(copy)).rejects.toThrow(/bytes after the header, \d+ expected: the file is damaged or cut short/);
    writeFileSync(copy, "not a recording\n");
    expect(listRecordings(dir()).bad.map((b) => b.why)).toEqual([expect.stringMatching(/not a flight recording/)]);
    rmSync(copy);
  });
});
