// `podwarden run` as a real process against the simulator: signals and what the devices do.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServer, type AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { parse, stringify } from "yaml";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { adminRequest } from "../agent/ops/admin-socket.js";
import { listRecordings, type RecordingEntry } from "../agent/recorder/recording-file.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { clearedAlarms, raisedAlarms, startDaemon, type Daemon, untilRunning } from "./helpers/daemon.js";
import { run, stopProcess, waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("podwarden run (daemon process)", () => {
  let t: TestSim;
  let dir: string;
  const daemons: Daemon[] = [];
  const configFile = (patch?: (c: Record<string, unknown>) => void): string => {
    const f = join(dir, `agent-${daemons.length}-${Math.random().toString(16).slice(2)}.yaml`);
    writeFileSync(
      f,
      stringify(
        demoConfigFor(t.sim, (c) => {
          c.pod = TEST_POD;
          patch?.(c);
        }),
      ),
    );
    return f;
  };
  /** Starts `podwarden run` on the config file and waits until it says it is running. */
  const launch = async (file: string, args: string[] = []): Promise<Daemon> => {
    const d = startDaemon(file, { args });
    daemons.push(d);
    await untilRunning(d);
    return d;
  };
  const leases = (): boolean[] => t.sim.truth().devices.map((x) => x.leaseExpired);

  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 1500 } });
    dir = tempDir("podwarden-daemon-");
  });
  afterEach(async () => {
    await Promise.all(daemons.splice(0).map((d) => stopProcess(d.child, "SIGKILL")));
    t.sim.inject({ clear: "all" });
  });
  afterAll(async () => {
    await t.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("on SIGTERM drives actuators safe, stops its heartbeats and exits 0 by itself", async () => {
    const d = await launch(configFile());
    await waitFor(() => leases().every((x) => !x), "leases held");
    d.child.kill("SIGTERM");
    expect(await d.exit).toBe(0);
    expect(d.lines.some((l) => l.msg === "stopped")).toBe(true);
    // valves were written to their declared safe value (open) before exit
    expect(t.sim.truth().racks.every((r) => r.valveCommandPct === 100)).toBe(true);
    // and with the heartbeat gone, the devices' own leases expire
    await waitFor(() => leases().every((x) => x), "leases expired", 10_000);
  }, 60_000);

  it("on SIGKILL the devices' leases expire and every valve reaches its fail position", async () => {
    const d = await launch(configFile());
    // let the loops take the valves away from their fail position first
    await waitFor(() => t.sim.truth().racks.some((r) => r.valveCommandPct < 99), "valves under control", 60_000, 100);
    d.child.kill("SIGKILL");
    await d.exit;
    await waitFor(() => leases().every((x) => x), "leases expired", 10_000);
    await waitFor(() => t.sim.truth().racks.every((r) => r.valveCommandPct === 100 && r.valvePct === 100), "valves fully open", 60_000, 100);
    expect(t.sim.truth().cdu.pumpSpeedCmdPct).toBe(80); // the pump's fail speed
  }, 120_000);

  it("resets a leak latch through `podwarden reset-leak` (the local admin socket), refusing while wet", async () => {
    const stateDir = mkdtempSync(join(dir, "state-"));
    const d = await launch(configFile((c) => (c.stateDir = stateDir)));
    await waitFor(() => leases().every((x) => !x), "leases held");
    t.sim.inject({ leak: "rack-4" });
    await waitFor(() => t.sim.truth().racks[3].supplyIsolationPct === 0, "rack-4 isolated", 15_000);
    const wet = await run("node", ["dist/cli/podwarden.js", "reset-leak", "--rack", "rack-4", "--state-dir", stateDir]);
    expect(wet.code).toBe(1);
    expect(wet.stderr).toMatch(/still wet/);
    t.sim.inject({ leak: "rack-4", state: "dry" });
    await new Promise((r) => setTimeout(r, 300));
    const ok = await run("node", ["dist/cli/podwarden.js", "reset-leak", "--rack", "rack-4", "--state-dir", stateDir]);
    expect(ok.code, ok.stderr).toBe(0);
    await waitFor(() => t.sim.truth().racks[3].supplyIsolationPct > 0, "rack-4 back in service", 15_000);
    expect(d.lines.some((l) => (l.event as { type?: string } | undefined)?.type === "command.audit")).toBe(true);
    const unknown = await run("node", ["dist/cli/podwarden.js", "reset-leak", "--rack", "rack-99", "--state-dir", stateDir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no rack "rack-99"/);
    d.child.kill("SIGTERM");
    expect(await d.exit).toBe(0);
  }, 60_000);

  it("cannot half-start: a service that cannot start (its spool's directory a file) stops the daemon, actuators driven safe, exit 1 with the reason", async () => {
    const stateDir = mkdtempSync(join(dir, "state-"));
    writeFileSync(join(stateDir, "spool"), "not a directory");
    const d = startDaemon(configFile((c) => {
      c.stateDir = stateDir;
      c.uplink = { url: "mqtt://127.0.0.1:1" };
    }));
    daemons.push(d);
    expect(await d.exit).toBe(1);
    const failed = d.lines.find((l) => l.msg === "podwarden could not start its services: actuators driven safe, stopping");
    expect(failed, JSON.stringify(d.lines.slice(-5))).toBeDefined();
    expect(JSON.stringify(failed)).toMatch(/spool/);
    // it never said it was running, and it drove its actuators safe on the way out
    expect(d.lines.some((l) => l.msg === "podwarden running")).toBe(false);
    expect(d.lines.some((l) => (l.event as { type?: string } | undefined)?.type === "agent.stopping")).toBe(true);
    // and its heartbeats stopped with it: the devices' own leases take over
    await waitFor(() => leases().every((x) => x), "every device's lease expired", 15_000);
  }, 60_000);

  it.each(["control", "leak"] as const)("cannot half-start: a %s thread that cannot start stops the daemon, what had started driven safe, exit 1 with the reason", async (part) => {
    const hook = pathToFileURL(join(process.cwd(), "dist/hil/daemon-hooks.js")).href;
    const d = startDaemon(configFile((c) => (c.stateDir = mkdtempSync(join(dir, "state-")))), { nodeFlags: [`--import=${hook}`], env: { PODWARDEN_HOOK_FAIL_START: part } });
    daemons.push(d);
    expect(await d.exit).toBe(1);
    const failed = d.lines.find((l) => l.msg === "podwarden could not start: stopping; the devices' leases keep what it had not driven safe");
    expect(failed, JSON.stringify(d.lines.slice(-5))).toBeDefined();
    expect(String(failed?.err)).toMatch(part === "control" ? /^the pod's control did not start: control worker did not start/ : /^the pod's control did not start: leak thread did not start/);
    expect(d.lines.some((l) => l.msg === "podwarden running")).toBe(false);
    // the leak thread failed after the control worker and the main driver had started: they were stopped, actuators driven safe
    if (part === "leak") expect(d.lines.some((l) => (l.event as { type?: string; reason?: string } | undefined)?.reason === "start failed")).toBe(true);
    // and nothing of it started again while it stopped
    expect(d.lines.some((l) => l.msg === "leak thread restarted")).toBe(false);
    await waitFor(() => leases().every((x) => x), "every device's lease expired", 15_000);
  }, 60_000);

  it("cannot half-start: a state directory that cannot be opened stops it before it touches a device, exit 1 with the reason", async () => {
    writeFileSync(join(dir, "a-file"), "not a directory");
    const d = startDaemon(configFile((c) => (c.stateDir = join(dir, "a-file", "state"))));
    daemons.push(d);
    expect(await d.exit).toBe(1);
    const failed = d.lines.find((l) => l.msg === "cannot open the state directory: podwarden does not start without it (leak latches and operator decisions live there)");
    expect(failed, JSON.stringify(d.lines.slice(-5))).toMatchObject({ err: expect.stringMatching(/ENOTDIR/) as unknown });
    expect(d.lines.some((l) => l.msg === "podwarden running" || (l.event as { type?: string } | undefined)?.type === "agent.started")).toBe(false);
  }, 60_000);

  it("runs on without a page that cannot start, with an alarm for each: metrics, the HMI and Redfish on a taken port, the admin socket unmakeable", async () => {
    const held = createServer();
    await new Promise<void>((r) => held.listen(0, "127.0.0.1", r));
    const port = (held.address() as AddressInfo).port;
    try {
      const stateDir = mkdtempSync(join(dir, "state-"));
      mkdirSync(join(stateDir, "admin.sock")); // a directory where the socket goes: it cannot be made
      const d = await launch(
        configFile((c) => {
          c.stateDir = stateDir;
          c.metrics = { port };
          c.hmi = { port };
          c.redfish = { enabled: true, port };
        }),
      );
      await waitFor(() => ["service:metrics", "service:hmi", "service:redfish", "service:admin"].every((id) => raisedAlarms(d).includes(id)), "an alarm per service left out", 15_000);
      const raised = d.lines.find((l) => (l.event as { alarm?: { id: string } } | undefined)?.alarm?.id === "service:hmi");
      expect(JSON.stringify(raised)).toMatch(/hmi could not start \(its port is taken\); the daemon runs without it until its next start/);
      // and control runs: the devices keep their leases
      await waitFor(() => leases().every((x) => !x), "leases held");
      d.child.kill("SIGTERM");
      expect(await d.exit).toBe(0);
    } finally {
      held.close();
    }
  }, 60_000);

  it("refuses a second daemon for the same pod or the same state directory (exit 3, naming the first), before it touches a device", async () => {
    const stateDir = mkdtempSync(join(dir, "state-"));
    const first = await launch(configFile((c) => (c.stateDir = stateDir)));
    await waitFor(() => leases().every((x) => !x), "leases held");
    const accepted = t.sim.connectionsAccepted();
    const second = (patch: (c: Record<string, unknown>) => void): ReturnType<typeof run> => run("node", ["dist/cli/podwarden.js", "run", "-c", configFile(patch)]);
    const samePod = await second((c) => (c.stateDir = mkdtempSync(join(dir, "state-"))));
    expect(samePod.code, samePod.stderr).toBe(3);
    expect(samePod.stderr).toContain(`pid ${first.child.pid}`);
    expect(samePod.stderr).toMatch(/already running pod \S+\/\S+: stop it first/);
    const sameDir = await second((c) => {
      c.stateDir = stateDir;
      c.pod = "pod-z";
    });
    expect(sameDir.code, sameDir.stderr).toBe(3);
    expect(sameDir.stderr).toMatch(/already running state directory /);
    // neither ever connected to a device, so neither wrote a safe value under the running one
    expect(t.sim.connectionsAccepted()).toBe(accepted);
    expect(first.child.exitCode).toBeNull();
    // the claims end with the process, however it ends: after SIGKILL one starts at once
    first.child.kill("SIGKILL");
    await first.exit;
    const next = await launch(configFile((c) => (c.stateDir = stateDir)));
    next.child.kill("SIGTERM");
    expect(await next.exit).toBe(0);
  }, 90_000);

  it("keeps an operator's isolation through a restart and a structural SIGHUP reload: the valves never reopen", async () => {
    const stateDir = mkdtempSync(join(dir, "state-"));
    // an isolation an operator made before this start (for hose work on rack-2), written by a
    // daemon, so listed in the state directory's manifest
    mkdirSync(join(stateDir, ".manifest"), { mode: 0o700 });
    writeFileSync(join(stateDir, ".manifest", "operator.json"), "");
    writeFileSync(join(stateDir, "operator.json"), JSON.stringify({ isolatedRacks: ["rack-2"], loopModes: [], maintenance: false, setpoints: [], savedAt: new Date().toISOString() }));
    const file = configFile((c) => (c.stateDir = stateDir));
    const d = await launch(file);
    // the simulated valve starts open (a real one was shut before the restart): once shut, it must stay shut
    await waitFor(() => t.sim.truth().racks[1].supplyIsolationPct === 0, "rack-2 shut", 15_000);
    expect(d.lines.some((l) => l.msg === "operator decision restored from before the restart" && l.decision === "rack-2 isolated by an operator")).toBe(true);
    let reopened = false;
    const watch = setInterval(() => (reopened ||= t.sim.truth().racks[1].supplyIsolationPct > 0), 20);
    try {
      // a structural change: the agent's internals are rebuilt from the new config
      const data = parse(readFileSync(file, "utf8")) as { racks: { ratedKw?: number }[] };
      data.racks[0].ratedKw = 119; // 120 by default
      writeFileSync(file, stringify(data));
      d.child.kill("SIGHUP");
      await waitFor(() => d.lines.some((l) => l.msg === "reload: devices or wiring changed, restarting the agent's internals"), "structural reload", 10_000);
      await waitFor(() => d.lines.filter((l) => l.msg === "agent.started").length === 2, "new agent started");
      const status = await adminRequest(join(stateDir, "admin.sock"), "GET", "/status");
      expect((status.body.racks as { isolatedByOperator: boolean }[])[1].isolatedByOperator).toBe(true);
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      clearInterval(watch);
    }
    expect(reopened).toBe(false);
    d.child.kill("SIGTERM");
    expect(await d.exit).toBe(0);
    expect(t.sim.truth().racks[1].supplyIsolationPct).toBe(0); // a clean stop leaves it isolated too
  }, 60_000);

  it("takes a state directory that holds state but no manifest as lost: every rack with a leak input isolated, and a Critical alarm; --first-start takes it as it is", async () => {
    const seeded = (): string => {
      const stateDir = mkdtempSync(join(dir, "state-"));
      writeFileSync(join(stateDir, "command-seq.json"), JSON.stringify({ keys: {} })); // latches.json gone with the manifest
      return stateDir;
    };
    const lostDir = seeded();
    const d = await launch(configFile((c) => (c.stateDir = lostDir)));
    const status = async (): Promise<{ racks: { isolation: string }[] }> => (await adminRequest(join(lostDir, "admin.sock"), "GET", "/status")).body as { racks: { isolation: string }[] };
    await waitFor(() => raisedAlarms(d).includes("state:manifest"), "state:manifest raised", 10_000);
    expect(raisedAlarms(d)).toContain("state:latches");
    expect((await status()).racks.every((r) => r.isolation !== "Normal")).toBe(true);
    await waitFor(() => t.sim.truth().racks.every((r) => r.supplyIsolationPct === 0), "every rack shut", 15_000);
    d.child.kill("SIGTERM");
    expect(await d.exit).toBe(0);

    const newDir = seeded();
    const first = await launch(configFile((c) => (c.stateDir = newDir)), ["--first-start"]);
    expect(first.lines.some((l) => l.msg === "first start stated: the state directory's manifest is made from the files present")).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // a supervisor pass or more, for any alarm to be raised
    const r = (await adminRequest(join(newDir, "admin.sock"), "GET", "/status")).body as { racks: { isolation: string }[] };
    expect(r.racks.every((x) => x.isolation === "Normal")).toBe(true);
    expect(raisedAlarms(first).filter((a) => a.startsWith("state:"))).toEqual([]);
    first.child.kill("SIGTERM");
    expect(await first.exit).toBe(0);
  }, 90_000);

  it("on SIGHUP rejects an invalid config and keeps running; applies a valid tuning change", async () => {
    const file = configFile();
    const before = statSync(file).mtimeMs;
    // the leases the last test's daemon refreshed before its SIGKILL would pass for this one's
    // until they run out (1.5 s): "leases held" below must be this daemon's own
    await waitFor(() => leases().every((x) => x), "the previous daemon's leases expired", 10_000);
    const d = await launch(file);
    await waitFor(() => leases().every((x) => !x), "leases held");
    const original = readFileSync(file, "utf8");
    writeFileSync(file, original.replace("returnTempSetpointC: 45", "returnTempSetpointC: .nan"));
    d.child.kill("SIGHUP");
    await waitFor(() => d.lines.some((l) => String(l.msg).startsWith("reload rejected")), "reload rejected");
    const rejected = d.lines.find((l) => String(l.msg).startsWith("reload rejected"))!;
    expect(JSON.stringify(rejected.problems)).toMatch(/control\.returnTempSetpointC/);
    expect(d.child.exitCode).toBeNull();
    // refused with an alarm that says why, not only a log line
    await waitFor(() => raisedAlarms(d).includes("config:rejected"), "the config:rejected alarm");
    // the daemon's identity (the state directory here) changes only with a restart
    writeFileSync(file, `${original}\nstateDir: ${join(dir, "elsewhere")}\n`);
    d.child.kill("SIGHUP");
    await waitFor(() => d.lines.filter((l) => String(l.msg).startsWith("reload rejected")).length === 2, "identity change rejected");
    expect(JSON.stringify(d.lines.filter((l) => String(l.msg).startsWith("reload rejected"))[1].problems)).toMatch(/state directory changed/);
    writeFileSync(file, original.replace("returnTempSetpointC: 45", "returnTempSetpointC: 44"));
    d.child.kill("SIGHUP");
    await waitFor(() => d.lines.some((l) => l.msg === "reload: tuning applied in place"), "tuning applied");
    // taken: the alarm clears
    await waitFor(() => clearedAlarms(d).includes("config:rejected"), "the config:rejected alarm cleared");
    expect(t.sim.truth().devices.every((x) => !x.leaseExpired)).toBe(true); // control never stopped
    d.child.kill("SIGTERM");
    expect(await d.exit).toBe(0);
    expect(statSync(file).mtimeMs).toBeGreaterThanOrEqual(before); // only we wrote it; the daemon never does
  }, 60_000);

  it("writes a leak's flight recording at once, so it survives a SIGKILL right after the trip; `podwarden recording` lists, exports and replays it", async () => {
    const stateDir = mkdtempSync(join(dir, "state-"));
    const recordings = join(stateDir, "recordings");
    // a post-trigger window the daemon will not live to finish
    const cfg = configFile((c) => ((c.stateDir = stateDir), (c.recorder = { preS: 1, postS: 30 })));
    const d = await launch(cfg);
    await waitFor(() => leases().every((x) => !x), "leases held");
    await new Promise((r) => setTimeout(r, 1500));
    t.sim.inject({ leak: "rack-2", state: "wet" });
    // (a start-up overrun burst on a loaded machine may have written a recording of its own)
    const ofLeak = (): RecordingEntry | undefined => listRecordings(recordings).recordings.find((r) => r.header.triggers.some((x) => x.reason === "alarm:leak:rack-2"));
    await waitFor(() => ofLeak() !== undefined, "the pre-trigger recording on disk", 15_000, 5);
    d.child.kill("SIGKILL");
    await d.exit;
    const rec = ofLeak()!;
    expect(rec.header.complete).toBe(false);
    expect(readdirSync(recordings).filter((n) => n.endsWith(".tmp"))).toEqual([]);

    const list = await run("node", ["dist/cli/podwarden.js", "recording", "list", "--state-dir", stateDir]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${rec.id} .* INCOMPLETE .*alarm:leak:rack-2`));
    const csv = join(dir, "rec.csv");
    const exported = await run("node", ["dist/cli/podwarden.js", "recording", "export", rec.id.slice(0, 15), "--csv", "--out", csv, "--state-dir", stateDir]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(readFileSync(csv, "utf8").trim().split("\n")).toHaveLength(rec.header.count + 1);
    // into the virtual pod: the daemon's own config gives the wiring
    const replay = await run("node", ["dist/cli/podwarden.js", "recording", "replay", rec.id, "-c", cfg, "--state-dir", stateDir]);
    expect(replay.code, replay.stdout + replay.stderr).toBe(0);
    expect(replay.stdout).toContain("outputs: identical to the recording, bit for bit");
    expect(replay.stdout).not.toContain("note:"); // the same config file: no note
    // the isolation valves first in that pass, the rack's power in the same pass
    expect(replay.stdout).toMatch(/rack-2: isolation written 0 ticks after the tick that decided it, at -?[\d.]+ ms; that pass wrote rack-2\.supplyIsolationOpen=0, rack-2\.returnIsolationOpen=0, .*rack-2\.powerOff=1/);
    expect(replay.stdout).toMatch(/rack-2 +recorded: left service at -?[\d.]+ ms, supply closed at -?[\d.]+ ms, ends (isolating|isolated) +\(replay: the same\)/);
    const none = await run("node", ["dist/cli/podwarden.js", "recording", "export", "nope", "--csv", "--state-dir", stateDir]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no recording "nope"/);
  }, 60_000);
});
