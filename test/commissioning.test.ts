// Commissioning from the CLI (docs/commissioning.md): `podwarden io` over a running daemon's admin
// socket lists every field point live, with its value, quality and age beside its device's
// health, against the simulator's devices and an independent one (pymodbus); `podwarden io force`
// holds one control output for a loop check, in maintenance only, audited, until its lease ends.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IoRow } from "../agent/ops/io-list.js";
import type { CommissionReport } from "../agent/commissioning/commission-report.js";
import { freePort } from "../tooling/free-port.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { runningDaemon, type Daemon } from "./helpers/daemon.js";
import { run, stopProcess, waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("podwarden io", () => {
  let t: TestSim;
  let py: ChildProcess;
  let daemon: Daemon;
  let stateDir: string;
  let configured: string[];

  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 3000 } });
    const pyPort = await freePort();
    py = spawn("/usr/bin/python3", ["test/peers/pymodbus_server.py", String(pyPort)], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<string>((resolve, reject) => {
      createInterface({ input: py.stdout! }).once("line", resolve);
      py.once("exit", (code) => reject(new Error(`pymodbus exited ${code}`)));
    });
    const dir = tempDir("podwarden-io-");
    stateDir = join(dir, "state");
    const data = demoConfigFor(t.sim, (c) => {
      c.pod = `${TEST_POD}-io`;
      c.stateDir = stateDir;
      // an independent device beside the pod's: pymodbus's known-answer registers (0xBEEF at 0, -1234 at 1)
      (c.modbus as { devices: object[] }).devices.push({
        name: "py",
        unitId: 1,
        tcp: { port: pyPort },
        timeoutMs: 500,
        points: [
          { name: "v0", table: "holding", address: 0, type: "u16", group: "control" },
          { name: "v1", table: "holding", address: 1, type: "i16", group: "control" },
        ],
      });
    }) as { modbus: { devices: { name: string; points: { name: string }[] }[] } };
    configured = data.modbus.devices.flatMap((d) => d.points.map((p) => `${d.name}.${p.name}`)).sort();
    daemon = await runningDaemon(dir, data);
  }, 60_000);
  afterAll(async () => {
    if (daemon !== undefined) await stopProcess(daemon.child, "SIGKILL");
    if (py !== undefined) await stopProcess(py);
    await t?.stop();
  });

  const io = async (): Promise<IoRow[]> => {
    const r = await run("node", ["dist/cli/podwarden.js", "io", "--json", "--state-dir", stateDir]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as IoRow[];
  };
  const row = (rows: IoRow[], id: string): IoRow => rows.find((r) => r.id === id)!;

  it("lists every configured point, live, beside its device's health", async () => {
    let rows: IoRow[] = [];
    await waitFor(async () => {
      rows = await io();
      return row(rows, "py.v0")?.quality === "good" && row(rows, "rack-3.returnTempC")?.quality === "good";
    }, "the points read", 20_000, 200);
    expect(rows.map((r) => r.id).filter((id) => configured.includes(id))).toEqual(configured);
    expect(row(rows, "py.v0")).toMatchObject({ device: "py", value: 0xbeef, quality: "good", deviceOk: true });
    expect(row(rows, "py.v1").value).toBe(-1234);
    const temp = row(rows, "rack-3.returnTempC");
    expect(temp).toMatchObject({ device: "rack-3", unit: "°C", quality: "good", deviceOk: true });
    expect(temp.value).toBeCloseTo(t.sim.truth().racks[2].returnTempC, 0);
    expect(temp.ageMs).not.toBeNull();
  });

  it("shows a device that stopped answering, and its points' last values as not good", async () => {
    t.sim.inject({ device: "rack-5", offline: true });
    let rows: IoRow[] = [];
    await waitFor(async () => {
      rows = await io();
      return row(rows, "rack-5.flowLpm").deviceOk === false;
    }, "rack-5 shown unwell", 20_000, 200);
    expect(row(rows, "rack-5.flowLpm").quality).not.toBe("good");
    expect(row(rows, "rack-5.flowLpm").deviceWhy).toMatch(/circuit breaker|not answering/);
    expect(row(rows, "rack-4.flowLpm")).toMatchObject({ quality: "good", deviceOk: true });
    t.sim.inject({ device: "rack-5", offline: false });
  });

  it("prints a table a person reads, and says so when no daemon answers", async () => {
    const r = await run("node", ["dist/cli/podwarden.js", "io", "--state-dir", stateDir]);
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n")[0]).toMatch(/^point +value +quality +age +device$/);
    expect(r.stdout).toMatch(/^py\.v0 +48879 +good +\d+ ms +ok$/m);
    const none = await run("node", ["dist/cli/podwarden.js", "io", "--state-dir", tempDir("podwarden-io-none-")]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/cannot reach the daemon at .*admin\.sock/);
  });

  const cli = (...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => run("node", ["dist/cli/podwarden.js", ...args, "--state-dir", stateDir]);
  const events = (type: string): Record<string, unknown>[] => daemon.lines.map((l) => l.event as Record<string, unknown> | undefined).filter((e): e is Record<string, unknown> => e?.type === type);
  const valveCommand = (rack: number): number => t.sim.truth().racks[rack].valveCommandPct;

  it("forces a control valve for a loop check only in maintenance, through the real device, audited, until its lease ends or it is released", async () => {
    // outside maintenance: refused, and the valve is not moved
    const refused = await cli("io", "force", "rack-2.valveCommandPct", "23.4", "--lease", "60");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/put the pod in maintenance first/);
    // the daemon's log reaches this process on its own pipe: waited for, not assumed there
    const audited = (action: string, result: string): Promise<void> =>
      waitFor(() => events("command.audit").some((e) => e.action === action && e.result === result && e.by === "local admin socket"), `audit: ${action} ${result}`, 10_000);
    await audited("force 23.4 for 60 s", "refused");
    expect((await cli("maintenance", "on")).code).toBe(0);
    // outside the loop's output envelope: refused as such
    const outside = await cli("io", "force", "rack-2.valveCommandPct", "150", "--lease", "60");
    expect(outside.code).toBe(1);
    expect(outside.stderr).toMatch(/outside the configured envelope/);

    const forced = await cli("io", "force", "rack-2.valveCommandPct", "23.4", "--lease", "60");
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(/rack-2\.valveCommandPct \(rack-2's control valve\): forced to 23\.4 for 60 s, as rack-2\.valve's Override/);
    await waitFor(() => Math.abs(valveCommand(1) - 23.4) < 0.05, "the real valve commanded to 23.4 %", 10_000);
    await audited("force 23.4 for 60 s", "accepted");
    // released early: the loop takes its output back (its Override gone, said as an event)
    const released = await cli("io", "force", "rack-2.valveCommandPct", "--release");
    expect(released.code, released.stderr).toBe(0);
    await audited("force release", "accepted");
    expect((await cli("io", "force", "rack-2.valveCommandPct", "--release")).stderr).toMatch(/not forced/);

    // a lease that runs out: the loop goes back to its own mode by itself
    expect((await cli("io", "force", "rack-3.valveCommandPct", "11", "--lease", "1")).code).toBe(0);
    await waitFor(() => events("override.expired").some((e) => e.loop === "rack-3.valve" && e.mode === "Automatic"), "the force's lease ran out", 10_000);
    // the end of maintenance ends a force still held, however long its lease: a loop check
    // needs maintenance, and normal operation must not keep a loop held by hand
    expect((await cli("io", "force", "rack-4.valveCommandPct", "17", "--lease", "600")).code).toBe(0);
    await waitFor(() => Math.abs(valveCommand(3) - 17) < 0.05, "the real valve commanded to 17 %", 10_000);
    expect((await cli("maintenance", "off")).code).toBe(0);
    await waitFor(() => events("override.expired").some((e) => e.loop === "rack-4.valve" && e.mode === "Automatic"), "the force ended with maintenance", 10_000);
    expect((await cli("io", "force", "rack-4.valveCommandPct", "--release")).stderr).toMatch(/not forced/);
  });

  it("refuses to force what a loop check must not move: an isolation valve (naming a leak latch), a rack's power, an unknown output", async () => {
    expect((await cli("maintenance", "on")).code).toBe(0);
    try {
      const iso = await cli("io", "force", "rack-3.supplyIsolationOpen", "0", "--lease", "10");
      expect(iso.code).toBe(1);
      expect(iso.stderr).toMatch(/rack-3's supply isolation valve is the leak path's: isolate-rack and return-rack move it/);
      const power = await cli("io", "force", "rack-1.powerOff", "1", "--lease", "10");
      expect(power.stderr).toMatch(/rack-1's power off cannot be forced: a rack's power follows its coolant/);
      expect((await cli("io", "force", "rack-1.nothing", "1", "--lease", "10")).stderr).toMatch(/the pod drives no output "rack-1\.nothing"/);
      // a rack latched for a leak: the refusal says so
      t.sim.inject({ leak: "rack-6", state: "wet" });
      await waitFor(async () => /latched for a leak/.test((await cli("io", "force", "rack-6.returnIsolationOpen", "1", "--lease", "10")).stderr), "the latch named", 10_000, 200);
      expect(t.sim.truth().racks[5].returnIsolationPct).toBeLessThan(100);
    } finally {
      t.sim.inject({ leak: "rack-6", state: "dry" });
      await waitFor(async () => (await cli("reset-leak", "--rack", "rack-6")).code === 0, "rack-6's latch reset", 15_000, 300);
      expect((await cli("maintenance", "off")).code).toBe(0);
    }
  });

  it("keeps a signed-off record of every point and output as seen now, and says what is not ok", async () => {
    let r = { code: null as number | null, stdout: "", stderr: "" };
    // every device answering again (an earlier test took rack-5 off the line)
    await waitFor(async () => (r = await cli("commission", "--by", "A. Engineer")).code === 0, "a clean walk", 30_000, 500);
    expect(r.stdout).toMatch(/^points (\d+) of \1 ok, outputs (\d+) of \2 ok$/m);
    const json = /^record: (\S+\.json)$/m.exec(r.stdout)![1];
    const html = /^ +(\S+\.html) \(to print and sign\)$/m.exec(r.stdout)![1];
    expect(json.startsWith(join(stateDir, "commissioning", "commission-"))).toBe(true);
    // the state directory's modes: the service's user alone
    expect([statSync(json).mode & 0o777, statSync(html).mode & 0o777, statSync(join(stateDir, "commissioning")).mode & 0o777]).toEqual([0o600, 0o600, 0o700]);
    const rec = JSON.parse(readFileSync(json, "utf8")) as CommissionReport;
    expect(rec).toMatchObject({ format: "podwarden-commission-1", site: expect.any(String) as unknown, pod: `${TEST_POD}-io`, by: "A. Engineer" });
    // the digest is of the record without it: the printed copy and the file can be matched
    const { sha256, ...body } = rec;
    expect(createHash("sha256").update(JSON.stringify(body)).digest("hex")).toBe(sha256);
    expect(r.stdout).toContain(`sha256 ${sha256}`);
    // every configured input point walked, and every output with its read-back and feedback
    expect(rec.points.map((p) => p.id)).toEqual(expect.arrayContaining(["py.v0", "rack-3.returnTempC", "cdu.dpKpa"]));
    const valve = rec.outputs.find((o) => o.id === "rack-2.valveCommandPct")!;
    expect(valve).toMatchObject({ what: "rack-2 control valve", ok: true, readBack: { quality: "good" }, feedback: [{ id: "rack-2.valvePositionPct", quality: "good" }] });
    expect(rec.outputs.find((o) => o.id === "rack-2.supplyIsolationOpen")?.feedback.map((f) => f.id)).toEqual(["rack-2.supplyIsoOpenLimit", "rack-2.supplyIsoClosedLimit"]);
    const page = readFileSync(html, "utf8");
    expect(page).toMatch(/^<!doctype html>/);
    expect(page).toContain("signed off by <b>A. Engineer</b>");
    expect(page).toContain(sha256);
    await waitFor(() => events("command.audit").some((e) => e.action === "commission" && String(e.result).startsWith("points")), "the walk audited", 10_000);

    // a device off the line: its points and outputs named, exit 1, the record written all the same
    t.sim.inject({ device: "rack-7", offline: true });
    try {
      await waitFor(async () => (r = await cli("commission", "--by", "A. Engineer")).code === 1 && /CHECK rack-7\.flowLpm: /.test(r.stdout), "rack-7 named", 30_000, 500);
      // an output's last read-back is of a write before the device went: its health says so
      expect(r.stdout).toMatch(/^CHECK rack-7\.valveCommandPct: device: not answering .*; feedback rack-7\.valvePositionPct offline$/m);
      expect(r.stdout).not.toMatch(/CHECK rack-6/);
      expect(existsSync(/^record: (\S+\.json)$/m.exec(r.stdout)![1])).toBe(true);
    } finally {
      t.sim.inject({ device: "rack-7", offline: false });
    }
    // who signs it off is said
    expect((await cli("commission")).code).toBe(2);
    expect((await cli("commission", "--by", "<script>")).stderr).toMatch(/by: who signs the record off/);
  });
});
