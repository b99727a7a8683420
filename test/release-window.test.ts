// The health window after an upgrade (issue #51 item 2): pure, then in the daemon against the
// simulator: a build run for the first time here is recorded good once its window passes; a
// build that loses a device the last good one had fails its window, records why and raises
// release:health-window; a build that keeps dying before its window ends fails at its next start.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HealthWindow, releaseName, type GoodRun, type WindowSample } from "../agent/release/health-window.js";
import { currentRelease, TRIAL_STARTS_MAX, type ReleaseRecord } from "../agent/release/release-feature.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { raisedAlarms, startDaemon, untilRunning, type Daemon } from "./helpers/daemon.js";
import { stopProcess, waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

const good: GoodRun = { version: "0.1.0", commit: "aaaaaaaaaaaaaaaa", at: "2026-12-01T00:00:00Z", devices: ["cdu", "rack-1", "rack-2"], criticals: ["leak:rack-2"] };
const sample = (s: Partial<WindowSample> = {}): WindowSample => ({ mode: "Running", controlHealthy: true, configured: ["cdu", "rack-1", "rack-2"], answering: ["cdu", "rack-1", "rack-2"], criticals: [], ...s });

describe("the health window, pure", () => {
  it("gives no verdict before its end, and passes a build as healthy as the last good one", () => {
    const w = new HealthWindow(good, 1000, 5000, `under ${releaseName(good)}`);
    w.sample(sample());
    expect(w.verdict(5999)).toBeNull();
    expect(w.verdict(6000)).toEqual({ ok: true, devices: ["cdu", "rack-1", "rack-2"], criticals: [] });
  });

  it("fails on a device the last good build had, a new Critical alarm at any time in it, or control unhealthy at its end", () => {
    const w = new HealthWindow(good, 0, 1000, `under ${releaseName(good)}`);
    w.sample(sample({ criticals: ["leak:rack-2", "isolation-failed:rack-1"] }));
    w.sample(sample({ answering: ["cdu", "rack-2"], mode: "Failsafe", controlHealthy: false }));
    const v = w.verdict(1000);
    expect(v).toEqual({
      ok: false,
      why: [
        "control not healthy at the window's end (mode Failsafe, control:stalled standing)",
        "device rack-1 answered under 0.1.0 (commit aaaaaaaaaaaa) and does not now",
        "Critical alarm isolation-failed:rack-1 raised in the window, not standing under 0.1.0 (commit aaaaaaaaaaaa)",
      ],
    });
  });

  it("holds its verdict while the pod is still Starting (waiting for valid inputs)", () => {
    const w = new HealthWindow(good, 0, 10, `under ${releaseName(good)}`);
    w.sample(sample({ mode: "Starting", answering: [] }));
    expect(w.verdict(20_000)).toBeNull();
    w.sample(sample({ mode: "Degraded", answering: ["cdu"] }));
    expect(w.verdict(30_000)).toEqual({ ok: false, why: ["devices rack-1, rack-2 answered under 0.1.0 (commit aaaaaaaaaaaa) and do not now"] });
  });

  it("does not miss a device taken out of the config, and with no good run judges control alone", () => {
    const w = new HealthWindow(good, 0, 10, `under ${releaseName(good)}`);
    w.sample(sample({ configured: ["cdu", "rack-2"], answering: ["cdu", "rack-2"] }));
    expect(w.verdict(10)?.ok).toBe(true);
    const first = new HealthWindow(null, 0, 10, "");
    first.sample(sample({ answering: [], criticals: ["state:manifest"] }));
    expect(first.verdict(10)).toEqual({ ok: true, devices: [], criticals: ["state:manifest"] });
  });
});

describe("the health window in the daemon", () => {
  let t: TestSim;
  const dir = tempDir("podwarden-release-");
  const stateDir = join(dir, "state");
  const record = (): ReleaseRecord => JSON.parse(readFileSync(join(stateDir, "release.json"), "utf8")) as ReleaseRecord;
  const config = join(dir, "agent.yaml");

  let data: Record<string, unknown>;
  const writeConfig = (patch: Record<string, unknown> = {}): void => writeFileSync(config, stringify({ ...data, ...patch }));

  beforeAll(async () => {
    t = await startTestSim();
    mkdirSync(stateDir, { recursive: true });
    data = demoConfigFor(t.sim, (c) => {
      c.pod = `${TEST_POD}-release`;
      c.stateDir = stateDir;
      c.hmi = { ...(c.hmi as object | undefined), enabled: false };
      c.metrics = { ...(c.metrics as object | undefined), enabled: false };
      c.release = { healthWindowS: 2 };
    }) as Record<string, unknown>;
    writeConfig();
  });
  afterAll(async () => {
    await t?.stop();
  });

  /** `podwarden run` until `until` holds of its log, then stopped. */
  const runUntil = async (until: (lines: Record<string, unknown>[]) => boolean, what: string): Promise<Daemon> => {
    const d = startDaemon(config);
    try {
      await untilRunning(d, 60_000);
      await waitFor(() => until(d.lines), what, 60_000);
    } finally {
      await stopProcess(d.child);
    }
    return d;
  };

  it("records a build run here for the first time good once its window passes, with the devices that answered", async () => {
    const { lines } = await runUntil((l) => l.some((x) => x.msg === "health window passed: this build is recorded good"), "the window's end");
    expect(lines.some((x) => typeof x.msg === "string" && x.msg.startsWith("on trial: a health window of 2 s"))).toBe(true);
    const r = record();
    expect(r.trial).toBeNull();
    expect(r.failed).toBeNull();
    expect({ version: r.good?.version, commit: r.good?.commit }).toEqual(currentRelease());
    // each device, and the leak thread's own connection to each rack's (the leak path)
    const racks = ["rack-1", "rack-2", "rack-3", "rack-4", "rack-5", "rack-6", "rack-7", "rack-8"];
    expect(r.good?.devices).toEqual(["cdu", ...racks.flatMap((x) => [x, `${x}#leak`])]);
    // the same build again: no window
    const again = await runUntil((l) => l.some((x) => x.msg === "podwarden running"), "running");
    expect(again.lines.some((x) => typeof x.msg === "string" && x.msg.startsWith("on trial"))).toBe(false);
  }, 120_000);

  it("fails the window of a build that lost a device the last good build had: why recorded, release:health-window raised", async () => {
    // the last good run was another build, with every device answering
    const r = record();
    writeFileSync(join(stateDir, "release.json"), JSON.stringify({ ...r, good: { ...r.good!, version: "0.0.9", commit: "0123456789abcdef" } }));
    t.sim.inject({ device: "rack-3", offline: true });
    try {
      const d = await runUntil((l) => l.some((x) => x.msg === "health window failed"), "the window's end");
      expect(raisedAlarms(d)).toContain("release:health-window");
      const raised = d.lines.find((x) => (x.event as { alarm?: { id: string } } | undefined)?.alarm?.id === "release:health-window")!.event as { alarm: { message: string; severity: string } };
      expect(raised.alarm.severity).toBe("Critical");
      expect(raised.alarm.message).toContain("devices rack-3, rack-3#leak answered under 0.0.9 (commit 0123456789ab) and do not now");
      expect(raised.alarm.message).toContain("`podwarden rollback` returns to 0.0.9 (commit 0123456789ab), the last good build, with its config");
    } finally {
      t.sim.inject({ device: "rack-3", offline: false });
    }
    const after = record();
    expect(after.good?.version).toBe("0.0.9");
    expect(after.failed?.why).toEqual(["devices rack-3, rack-3#leak answered under 0.0.9 (commit 0123456789ab) and do not now"]);
    expect({ version: after.failed?.version, commit: after.failed?.commit }).toEqual(currentRelease());
  }, 120_000);

  it(`fails a build that started ${TRIAL_STARTS_MAX} times in a row without reaching its window's end`, async () => {
    const r = record();
    writeFileSync(join(stateDir, "release.json"), JSON.stringify({ ...r, failed: null, trial: { ...currentRelease(), since: "2026-12-07T00:00:00Z", starts: TRIAL_STARTS_MAX } }));
    const { lines } = await runUntil((l) => l.some((x) => x.msg === "health window failed"), "the verdict");
    expect(lines.some((x) => typeof x.msg === "string" && x.msg.startsWith("on trial"))).toBe(false);
    expect(record().failed?.why).toEqual([`the daemon started ${TRIAL_STARTS_MAX} times on this build without reaching its health window's end (a crash loop?)`]);
    expect(record().trial).toBeNull();
  }, 120_000);

  it("does not count a reload that builds the pod anew as another start of the build on trial", async () => {
    // another build was the last good one, and this one's window is long enough for a reload in it
    const r = record();
    writeFileSync(join(stateDir, "release.json"), JSON.stringify({ good: { ...r.good!, version: "0.0.9", commit: "0123456789abcdef" }, trial: null, failed: null }));
    writeConfig({ release: { healthWindowS: 600 } });
    const d = startDaemon(config);
    const trials = (): number => d.lines.filter((l) => typeof l.msg === "string" && l.msg.startsWith("on trial")).length;
    try {
      await untilRunning(d, 60_000);
      await waitFor(() => trials() === 1, "on trial", 30_000);
      expect(record().trial?.starts).toBe(1);
      // a recorder change rebuilds the pod's internals (agent/lifecycle.ts sameStructure)
      writeConfig({ release: { healthWindowS: 600 }, recorder: { maxFiles: 7 } });
      d.child.kill("SIGHUP");
      await waitFor(() => trials() === 2, "the rebuilt pod on trial again", 60_000);
      expect(record().trial?.starts).toBe(1);
    } finally {
      await stopProcess(d.child);
    }
    // a new process is another start
    const next = startDaemon(config);
    try {
      await untilRunning(next, 60_000);
      expect(record().trial?.starts).toBe(2);
    } finally {
      await stopProcess(next.child);
      writeConfig();
    }
  }, 180_000);
});
