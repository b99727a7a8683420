// Commissioning from the CLI (docs/commissioning.md): `podwarden io` over a running daemon's admin
// socket lists every field point live, with its value, quality and age beside its device's
// health, against the simulator's devices and an independent one (pymodbus).
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IoRow } from "../agent/ops/io-list.js";
import { freePort } from "../tooling/free-port.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { startDaemon, untilRunning, type Daemon } from "./helpers/daemon.js";
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
    const f = join(dir, "agent.yaml");
    writeFileSync(f, stringify(data));
    daemon = startDaemon(f);
    await untilRunning(daemon);
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
});
