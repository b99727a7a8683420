// `podwarden scan --bus <name>` (docs/commissioning.md) against a running daemon whose rack-2 is
// on a serial line into the simulator's Modbus RTU front (a socat pty pair), where every simulated
// device answers by its unit id: the scan asks each id in turn through the daemon's own bus queue,
// behind rack-2's polls, and finds the configured device and the ones nobody configured.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScanRow } from "../drivers/modbus/bus-scan.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { runningDaemon, type Daemon } from "./helpers/daemon.js";
import { ptyPair, run, stopProcess, waitFor, type PtyPair } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("podwarden scan", () => {
  let t: TestSim;
  let line: PtyPair;
  let daemon: Daemon;
  let stateDir: string;

  beforeAll(async () => {
    line = await ptyPair();
    t = await startTestSim({ devices: { leaseMs: 3000, rtu: { path: line.b, baudRate: 115200 } } });
    const dir = tempDir("podwarden-scan-");
    stateDir = join(dir, "state");
    const data = demoConfigFor(t.sim, (c) => {
      c.pod = `${TEST_POD}-scan`;
      c.stateDir = stateDir;
      const m = c.modbus as { buses?: object[]; devices: Record<string, unknown>[] };
      m.buses = [{ name: "rs485-1", path: line.a, baudRate: 115200, parity: "none", latencyMs: 0 }];
      const rack2 = m.devices.find((d) => d.name === "rack-2")!;
      delete rack2.tcp;
      rack2.bus = "rs485-1";
    });
    daemon = await runningDaemon(dir, data);
  }, 60_000);
  afterAll(async () => {
    if (daemon !== undefined) await stopProcess(daemon.child, "SIGKILL");
    await t?.stop();
    await line?.stop();
  });

  const cli = (...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => run("node", ["dist/cli/podwarden.js", ...args, "--state-dir", stateDir]);

  it("finds every unit that answers on the bus, configured or not, and the silent ids, behind the bus's own traffic", async () => {
    // rack-2 read over the line first: the scan then shares the bus with its polls
    await waitFor(async () => /rack-2\.flowLpm +\S+ L\/min +good/.test((await cli("io")).stdout), "rack-2 read over RTU", 20_000, 300);
    const r = await cli("scan", "--bus", "rs485-1", "--from", "1", "--to", "20", "--timeout-ms", "60", "--json");
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as ScanRow[];
    expect(rows.map((x) => x.unitId)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const answered = rows.filter((x) => x.result === "answered").map((x) => x.unitId);
    // the simulator's CDU (unit 1) and its eight racks (11-18): all on its RTU front
    expect(answered).toEqual([1, 11, 12, 13, 14, 15, 16, 17, 18]);
    expect(rows.filter((x) => x.result === "silent").length).toBe(11);
    expect(rows.find((x) => x.unitId === 12)).toMatchObject({ device: "rack-2" });
    expect(rows.filter((x) => x.device !== undefined).map((x) => x.unitId)).toEqual([12]);
    for (const x of rows.filter((y) => y.result === "answered")) expect(x.ms).toBeGreaterThan(0);
    // rack-2 kept being read throughout
    expect((await cli("io")).stdout).toMatch(/rack-2\.flowLpm +\S+ L\/min +good/);
    // audited
    await waitFor(() => daemon.lines.some((l) => (l.event as { action?: string; result?: string } | undefined)?.action === "scan rs485-1 1-20"), "the scan audited", 10_000);
    expect(daemon.lines.find((l) => (l.event as { action?: string } | undefined)?.action === "scan rs485-1 1-20")?.event).toMatchObject({ result: "9 answered" });
  }, 60_000);

  it("prints the answers and the configured ids as a table, and refuses what it cannot scan", async () => {
    const r = await cli("scan", "--bus", "rs485-1", "--from", "10", "--to", "13", "--timeout-ms", "60");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split("\n")[0]).toMatch(/^unit +result +time +configured +detail$/);
    expect(r.stdout).toMatch(/^12 +answered +[\d.]+ ms +rack-2$/m);
    expect(r.stdout).not.toMatch(/^10 /m); // a silent id nobody configured is left out of the table
    expect(r.stdout).toMatch(/rs485-1: 4 ids asked, 3 answered, 0 with framing errors, 1 silent/);
    const none = await cli("scan", "--bus", "rs485-9");
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no serial bus "rs485-9" \(modbus.buses: rs485-1\)/);
    const long = await cli("scan", "--bus", "rs485-1", "--timeout-ms", "2000");
    expect(long.code).toBe(1);
    expect(long.stderr).toMatch(/247 ids at 2000 ms each could take past 120 s/);
    expect((await cli("scan")).code).toBe(2);
  }, 60_000);
});
