// Device-side safety in the three lease styles (drivers/modbus/lease.ts, docs/safety.md "Device
// leases"), each against the simulator emulating that style (devices.leaseStyle): held while the
// health gate is open, run out when it closes (a comms watchdog's device sent nothing at all),
// renewed when it opens; a kill -9 of the daemon leaves every valve at its fail position within
// the lease; the device's own lease time written and verified.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ModbusDriver } from "../drivers/modbus/driver.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { startDaemon, untilRunning, type Daemon } from "./helpers/daemon.js";
import { modbusConfig, rackPoints } from "./helpers/driver.js";
import { stopProcess, waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

const STYLES = [
  ["counter", "heartbeat-counter"],
  ["register", "watchdog-register"],
  ["comms", "comms-watchdog"],
] as const;

describe.each(STYLES)("a device keeping its lease by %s, podwarden's lease style %s", (simStyle, style) => {
  let t: TestSim;
  const drivers: ModbusDriver[] = [];
  const daemons: Daemon[] = [];
  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 1000, leaseStyle: simStyle } });
  });
  afterEach(async () => {
    await Promise.all(drivers.splice(0).map((d) => d.stop()));
    await Promise.all(daemons.splice(0).map((d) => stopProcess(d.child, "SIGKILL")));
    t.sim.inject({ clear: "all" });
  });
  afterAll(async () => {
    await t.stop();
  });
  const device = (name: string) => t.sim.truth().devices.find((x) => x.name === name)!;

  it("is held while the health gate is open, runs out when it closes, and is renewed when it opens", async () => {
    let healthy = true;
    const lease = { style, address: 2, periodMs: 100, value: 7 };
    const d = new ModbusDriver(
      modbusConfig({ groups: [{ name: "control", periodMs: 50, priority: 1 }], devices: [{ name: "rack4", unitId: 14, tcp: { port: t.port("rack-4") }, timeoutMs: 150, retries: 0, lease, points: rackPoints().filter((x) => x.name === "flowLpm" || x.name === "leakState") }] }),
    );
    drivers.push(d);
    d.setHealthGate(() => healthy);
    d.start();
    await waitFor(() => device("rack-4").leaseExpired === false && d.points.get("rack4.flowLpm")?.quality === "good", "lease held, device polled");
    healthy = false;
    const requests = device("rack-4").requests;
    await waitFor(() => device("rack-4").leaseExpired, "lease run out", 5000);
    await waitFor(() => t.sim.truth().racks[3].valveCommandPct === 100, "the device fails its valve open");
    // a comms watchdog's device is sent nothing at all while control is unhealthy: its polls wait too
    if (style === "comms-watchdog") expect(device("rack-4").requests).toBe(requests);
    else expect(device("rack-4").requests).toBeGreaterThan(requests);
    healthy = true;
    await waitFor(() => device("rack-4").leaseExpired === false, "lease renewed");
  });

  it.runIf(simStyle === "counter")("is not kept by a writer that repeats itself: a heartbeat counter must move", async () => {
    const d = new ModbusDriver(
      modbusConfig({ groups: [{ name: "control", periodMs: 50, priority: 1 }], devices: [{ name: "rack3", unitId: 13, tcp: { port: t.port("rack-3") }, timeoutMs: 150, lease: { style: "watchdog-register", address: 2, periodMs: 100, value: 7 }, points: rackPoints().filter((x) => x.name === "flowLpm") }] }),
    );
    drivers.push(d);
    d.setHealthGate(() => true);
    d.start();
    await waitFor(() => device("rack-3").lastHeartbeatAtMs !== null, "the first write taken");
    // the gate stays open and the same value keeps coming: the device's lease runs out all the same
    await waitFor(() => device("rack-3").leaseExpired, "lease run out", 5000);
  });

  it("on kill -9 of the daemon, every valve reaches its fail position within the lease", async () => {
    const dir = tempDir("podwarden-lease-");
    const f = join(dir, "agent.yaml");
    writeFileSync(
      f,
      stringify(
        demoConfigFor(t.sim, (c) => {
          c.pod = `${TEST_POD}-${simStyle}`;
          for (const dev of (c.modbus as { devices: { lease?: object }[] }).devices) dev.lease = { style, address: 2, periodMs: 200, value: 1 };
        }),
      ),
    );
    const d = startDaemon(f);
    daemons.push(d);
    await untilRunning(d);
    await waitFor(() => t.sim.truth().devices.every((x) => !x.leaseExpired), "leases held", 20_000);
    await waitFor(() => t.sim.truth().racks.some((r) => r.valveCommandPct < 99), "valves under control", 60_000, 100);
    d.child.kill("SIGKILL");
    await d.exit;
    await waitFor(() => t.sim.truth().devices.every((x) => x.leaseExpired), "leases expired", 10_000);
    await waitFor(() => t.sim.truth().racks.every((r) => r.valveCommandPct === 100), "valves at their fail position", 10_000, 100);
  }, 120_000);
});

describe("the device's own lease time", () => {
  let t: TestSim;
  const drivers: ModbusDriver[] = [];
  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 600 } });
  });
  afterEach(async () => {
    await Promise.all(drivers.splice(0).map((d) => d.stop()));
  });
  afterAll(async () => {
    await t.stop();
  });
  const start = (name: string, unitId: number, timeout: object): ModbusDriver => {
    const d = new ModbusDriver(
      modbusConfig({ groups: [{ name: "control", periodMs: 50, priority: 1 }], devices: [{ name, unitId, tcp: { port: t.port(name) }, timeoutMs: 150, lease: { address: 2, periodMs: 100, timeout }, points: rackPoints().slice(0, 1) }] }),
    );
    drivers.push(d);
    d.setHealthGate(() => true);
    d.start();
    return d;
  };

  it("is written at connect and read back", async () => {
    const d = start("rack-5", 15, { address: 3, ms: 900 });
    await waitFor(() => t.sim.truth().devices.find((x) => x.name === "rack-5")?.leaseMs === 900, "the device's lease time written");
    await new Promise((r) => setTimeout(r, 300));
    expect(d.stats().devices[0].leaseProblem).toBeNull();
  });

  it("only verified when the module's own tool sets it: a device holding another time is unwell, saying which", async () => {
    const d = start("rack-6", 16, { address: 3, ms: 2000, write: false });
    await waitFor(() => d.stats().devices[0].leaseProblem !== null, "the mismatch found");
    expect(d.stats().devices[0].leaseProblem).toBe("its lease time reads 600 ms (register 3), the config says 2000 ms");
    expect(t.sim.truth().devices.find((x) => x.name === "rack-6")?.leaseMs).toBe(600); // not written
  });

  it("refuses a renewal period more than half the lease time, and a time the register cannot hold", () => {
    const base = { name: "x", unitId: 1, tcp: { port: 1 }, points: rackPoints().slice(0, 1) };
    expect(() => modbusConfig({ devices: [{ ...base, lease: { address: 2, periodMs: 600, timeout: { address: 3, ms: 1000 } } }] })).toThrow(/devices\[0\]\.lease\.periodMs: 600 ms is more than half the device's lease time \(1000 ms\)/);
    expect(() => modbusConfig({ devices: [{ ...base, lease: { address: 2, periodMs: 100, timeout: { address: 3, ms: 100_000 } } }] })).toThrow(/lease\.timeout\.ms: 100000 ms is more than a register of 1 ms units holds/);
    expect(() => modbusConfig({ devices: [{ ...base, lease: { style: "heartbeat", address: 2 } }] })).toThrow(/lease\.style: must be one of "heartbeat-counter", "watchdog-register", "comms-watchdog"/);
  });
});
