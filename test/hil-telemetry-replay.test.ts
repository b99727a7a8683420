// A captured telemetry log as a HIL scenario's input: the demo pod (the agent with its real
// control worker and drivers) against the simulator over Modbus TCP, its uplink to a real broker
// (aedes) with mission control subscribed; a leak in the plant; what mission control received is
// written as `mosquitto_sub -v` prints it, and replayed through the pod stage with this config
// and build (the leak isolated within a tick of its reading), with a config that would not have
// tripped (the scenario fails, saying why), and through `podwarden hil run`. A log that cannot be
// read is refused, naming the line.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateAgentConfig } from "../agent/config/load.js";
import { runReplay } from "../hil/replay-runner.js";
import { isFlightRecording, loadHilScenario } from "../hil/scenario.js";
import { RECORDING_SUFFIX } from "../agent/recorder/recording-file.js";
import { parseTelemetryLog, readTelemetryLog, telemetryReplaySource } from "../hil/telemetry-replay.js";
import { startEmbeddedBroker, type EmbeddedBroker } from "../lib/embedded-broker.js";
import { demoConfigData } from "../cli/demo-config.js";
import { run, waitFor } from "./helpers/processes.js";
import { MissionControl, startUplinkPod, type UplinkPod } from "./helpers/uplink.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("a captured telemetry log replayed as a scenario's input", () => {
  let dir: string;
  let logFile: string;
  let broker: EmbeddedBroker;
  let pod: UplinkPod;
  let mc: MissionControl;

  beforeAll(async () => {
    dir = tempDir("pw-telemetry-replay-");
    broker = await startEmbeddedBroker();
    pod = await startUplinkPod({ brokerUrl: broker.url, protocolVersion: 4 });
    mc = await MissionControl.connect(broker.url, pod.base, 4);
    await waitFor(() => pod.agent.status().racks.every((r) => r.returnTempC !== null), "every rack read", 20_000);
    // two seconds of a pod in service, the leak, and the isolation seen by mission control
    await new Promise((r) => setTimeout(r, 2000));
    pod.sim.sim.inject({ leak: "rack-3" });
    await waitFor(() => mc.of("telemetry").some((m) => (m.racks as { name: string; isolation: string }[] | undefined)?.some((r) => r.name === "rack-3" && r.isolation !== "Normal") === true), "rack-3 isolated, as telemetry says", 10_000);
    await new Promise((r) => setTimeout(r, 1000));
    logFile = join(dir, "capture.log");
    // every topic, as `mosquitto_sub -v -t '<base>#'` prints it: the replay reads the telemetry only
    writeFileSync(logFile, mc.messages.map((m) => `${m.topic} ${JSON.stringify(m.body)}`).join("\n") + "\n");
  }, 60_000);

  afterAll(async () => {
    await mc?.close();
    await pod?.stop();
    await broker?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const scenarioFile = (): string => {
    const file = join(dir, "telemetry-leak.yaml");
    writeFileSync(
      file,
      [
        "name: telemetry-leak",
        "replay: capture.log",
        "expect:",
        "  - name: rack-3's isolation valves written shut within 1 ms (a tick) of its leak reading",
        "    signals: [writes.rack-3.supplyIsolationOpen, writes.rack-3.returnIsolationOpen]",
        "    is: { eq: 0 }",
        "    within: 1ms",
        "    after: { signal: pod.rack-3.leak, is: { eq: 1 } }",
        "  - name: no other rack isolated",
        "    signal: pod.*.isolated",
        "    except: [rack-3]",
        "    is: { eq: 1 }",
        "    never: {}",
        "  - name: rack-3's control valve written to its leak value (10 %)",
        "    signal: writes.rack-3.valveCommandPct",
        "    is: { eq: 10 }",
        "    count: { min: 1 }",
      ].join("\n"),
    );
    return file;
  };

  it("isolates the logged leak within a tick of its reading, with this config and build; a config that would not have tripped fails it", () => {
    const log = readTelemetryLog(logFile);
    expect(log.messages).toBeGreaterThan(10);
    expect(log.readings.some((r) => r.id === "rack-3.leakState" && r.value === 1)).toBe(true);
    const scenario = loadHilScenario(scenarioFile());
    const r = runReplay(scenario, pod.config, telemetryReplaySource(log, pod.config));
    expect(r.identical).toBeNull();
    expect(r.verdicts.map((v) => [v.name, v.passed, v.figure])).toEqual([
      [scenario.expect[0].name, true, expect.stringMatching(/^= 0 in 0 s after pod\.rack-3\.leak = 1 \(at [\d.]+ s\) \(limit 1\.0 ms\)$/)],
      [scenario.expect[1].name, true, expect.stringMatching(/^never = 1/)],
      [scenario.expect[2].name, true, expect.stringMatching(/^\d+ times? = 10 from 0 s/)],
    ]);
    // the replay runs from the first reading to the last: seconds of pod, at the control period
    expect(r.durationMs).toBeGreaterThan(2500);
    // a leak debounce that outlasts the log: the same log, the build does not isolate
    const slowData = structuredClone(demoConfigData());
    slowData.control = { ...(slowData.control as object), points: { leak: { debounceFault: 100_000 } } };
    const slow = validateAgentConfig(slowData, "slow leak");
    const broken = runReplay(scenario, slow, telemetryReplaySource(log, slow));
    expect(broken.passed).toBe(false);
    expect(broken.verdicts[0].figure).toMatch(/its reference, pod\.rack-3\.leak = 1, never happened/);
  });

  it("runs through podwarden hil run, saying it replayed a telemetry log", async () => {
    const r = await run("node", ["dist/cli/podwarden.js", "hil", "run", scenarioFile()], 60_000);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/capture\.log: a telemetry log, \d+ messages, \d+ readings, replayed with this config and build \(nothing recorded to compare its outputs with\)/);
    expect(r.stdout).toMatch(/PASS telemetry-leak \([\d.]+ s of a telemetry log replayed in/);
  }, 60_000);

  it("tells a flight recording from a telemetry log by the recorder's own suffix", () => {
    expect(isFlightRecording(`x${RECORDING_SUFFIX}`)).toBe(true);
    expect(isFlightRecording("capture.log")).toBe(false);
  });

  it("refuses a log it cannot read, naming the line, and one that never reports a point the pod reads", () => {
    const t = "2026-12-03T10:00:00.000Z";
    const good = JSON.stringify({ kind: "periodic", points: { "rack-1.flowLpm": { value: 40, quality: "good", sourceTime: t } } });
    expect(() => parseTelemetryLog(`${good}\n{"points": oops}\n`, "x.log")).toThrow(/x\.log:2: not JSON/);
    expect(() => parseTelemetryLog(`${good}\n{"kind":"periodic"}\n`, "x.log")).toThrow(/x\.log:2: a telemetry message carries its readings in "points"/);
    expect(() => parseTelemetryLog(JSON.stringify({ points: { a: { value: 1, quality: "fine", sourceTime: t } } }), "x.log")).toThrow(/x\.log:1: points\.a\.quality "fine" is none of good/);
    expect(() => parseTelemetryLog(JSON.stringify({ points: { a: { value: 1, quality: "good", sourceTime: "yesterday" } } }), "x.log")).toThrow(/x\.log:1: points\.a\.sourceTime "yesterday" is not a time/);
    expect(() => parseTelemetryLog(JSON.stringify({ points: { a: { value: null, quality: "good", sourceTime: t } } }), "x.log")).toThrow(/x\.log:1: points\.a is good with no number/);
    expect(() => parseTelemetryLog("podwarden/s/p/events {}\n", "x.log")).toThrow(/x\.log: no telemetry message in it/);
    expect(() => parseTelemetryLog(`{"points":{}}\n${"x".repeat(1024 * 1024 + 1)}\n`, "x.log")).toThrow(/x\.log:2: a line of 1048577 characters/);
    // a stale reading carries its last good read's time, long before the log: it neither acts nor stretches the replay
    const stale = JSON.stringify({ points: { "rack-1.flowLpm": { value: 40, quality: "good", sourceTime: t }, "rack-2.flowLpm": { value: null, quality: "stale", sourceTime: "2026-12-01T00:00:00.000Z" } } });
    const sl = parseTelemetryLog(stale, "x.log");
    expect(sl.readings.map((r) => r.id)).toEqual(["rack-1.flowLpm"]);
    expect([...sl.reported].sort()).toEqual(["rack-1.flowLpm", "rack-2.flowLpm"]);
    // a log of one point cannot drive a pod that reads forty
    expect(() => telemetryReplaySource(parseTelemetryLog(good, "x.log"), pod.config)).toThrow(/x\.log: the log never reports rack-1\.returnTempC, .*a replay needs the same pod/);
  });
});
