// The Modbus driver against real peers: the simulator over TCP, pymodbus as an independent
// server, and faults (exceptions, timeouts, late answers, offline devices, server restarts).
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ModbusDriver, WIRE_TRANSPORTS } from "../drivers/modbus/driver.js";
import { TcpTransport } from "../drivers/modbus/tcp-transport.js";
import { EXCEPTION } from "../drivers/modbus/protocol.js";
import type { Point } from "../lib/points.js";
import { monoMs } from "../lib/clock.js";
import { freePort } from "../tooling/free-port.js";
import { stopProcess, waitFor } from "./helpers/processes.js";
import { modbusConfig, rackPoints } from "./helpers/driver.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { countWords, fullCount } from "./helpers/counts.js";

/** Dropped connections in the reconnect test: 1,000 under `npm run soak -- --full-counts`, a sixth in `npm test` (helpers/counts.ts). */
const DROPS = fullCount(1000);

const drivers: ModbusDriver[] = [];
/** Each TCP device's transport, as the driver's factory made it (tests drop connections through it). */
const tcpTransports = new Map<string, TcpTransport>();
function startDriver(data: unknown): ModbusDriver {
  const d = new ModbusDriver(modbusConfig(data), {
    transports: {
      ...WIRE_TRANSPORTS,
      tcp: (dc, reconnect) => {
        const t = WIRE_TRANSPORTS.tcp(dc, reconnect);
        if (t instanceof TcpTransport) tcpTransports.set(dc.name, t);
        return t;
      },
    },
  });
  drivers.push(d);
  d.start();
  return d;
}
afterEach(async () => {
  await Promise.all(drivers.splice(0).map((d) => d.stop()));
});

const point = (d: ModbusDriver, id: string): Point | undefined => d.points.get(id);
const FAST = { groups: [{ name: "control", periodMs: 50, priority: 1 }], reconnect: { baseMs: 20, maxMs: 200, connectTimeoutMs: 500 } };

describe("Modbus driver against the simulator (TCP)", () => {
  let t: TestSim;
  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 400 } });
  });
  afterEach(() => t.sim.inject({ clear: "all" }));
  afterAll(async () => {
    await t.stop();
  });

  const rack = (n: number, over: object = {}): object => ({
    name: `rack${n}`,
    unitId: 10 + n,
    tcp: { port: t.port(`rack-${n}`) },
    timeoutMs: 150,
    retries: 0,
    points: rackPoints(),
    ...over,
  });

  it("publishes points with values, source times and good quality matching ground truth", async () => {
    const d = startDriver({ ...FAST, devices: [rack(1)] });
    await waitFor(() => point(d, "rack1.flowLpm")?.quality === "good", "first poll");
    const truth = t.sim.truth().racks[0];
    // the plant moves between the poll and this snapshot: within 2 % (the encodings are exact)
    expect(Math.abs(point(d, "rack1.flowLpm")!.value - truth.flowLpm)).toBeLessThan(0.02 * truth.flowLpm);
    expect(Math.abs(point(d, "rack1.returnTempC")!.value - truth.returnTempC)).toBeLessThan(0.5);
    expect(point(d, "rack1.leakState")!.value).toBe(0);
    expect(point(d, "rack1.supplyIsolationOpen")!.value).toBe(1);
    expect(point(d, "rack1.flowLpm")!.unit).toBe("L/min");
    const first = point(d, "rack1.flowLpm")!.sourceTimeMs;
    await waitFor(() => point(d, "rack1.flowLpm")!.sourceTimeMs > first, "a newer sample");
  });

  it("reads a 4–20 mA transmitter in engineering units, and a NAMUR NE 43 failure current as invalid", async () => {
    const tx = { name: "returnTx", table: "input", address: 11, type: "u16", scale: 0.001, unit: "°C", loop4to20: { at4mA: 0, at20mA: 100 } };
    const d = startDriver({ ...FAST, devices: [rack(2, { points: [...rackPoints(), tx] })] });
    await waitFor(() => point(d, "rack2.returnTx")?.quality === "good", "first poll");
    // the transmitter carries the same temperature as the direct register, to its 1 µA (0.00625 °C) step
    expect(Math.abs(point(d, "rack2.returnTx")!.value - t.sim.truth().racks[1].returnTempC)).toBeLessThan(0.5);
    expect(point(d, "rack2.returnTx")!.loopCurrentMa).toBeCloseTo(4 + (16 * point(d, "rack2.returnTx")!.value) / 100, 9);
    expect(point(d, "rack2.returnTx")!.detail).toBeUndefined();
    for (const [mA, why] of [[0, "broken loop"], [3.3, "downscale failure"], [21.8, "upscale failure"]] as const) {
      t.sim.inject({ sensor: "rack-2.returnTempMa", fault: "value", value: mA });
      await waitFor(() => point(d, "rack2.returnTx")?.quality === "invalid", why);
      expect(point(d, "rack2.returnTx")!.value, why).toBeNaN();
      // what the current was goes along, in mA and in words
      expect(point(d, "rack2.returnTx")!.loopCurrentMa, why).toBeCloseTo(mA, 3);
      expect(point(d, "rack2.returnTx")!.detail, why).toMatch(mA < 4 ? /below 3\.6 mA/ : /above 21 mA/);
      t.sim.inject({ sensor: "rack-2.returnTempMa", fault: "clear" });
      await waitFor(() => point(d, "rack2.returnTx")?.quality === "good", `${why} cleared`);
    }
    // the transmitter passes its sensor's failure on as the 3.5 mA failure current
    t.sim.inject({ sensor: "rack-2.returnTempC", fault: "nan" });
    await waitFor(() => point(d, "rack2.returnTx")?.quality === "invalid", "sensor failure through the transmitter");
  });

  it("writes outputs on change, verifies them by read-back, and refreshes them", async () => {
    const d = startDriver({
      ...FAST,
      devices: [rack(2, { outputs: [{ name: "valve", table: "holding", address: 0, type: "f32", order: "CDAB", refreshMs: 100 }, { name: "supplyIso", table: "coil", address: 0, type: "bool" }] })],
    });
    await waitFor(() => t.sim.truth().devices.find((x) => x.name === "rack-2")?.requests !== 0, "connection");
    d.setOutput("rack2.valve", 37.5);
    d.setOutput("rack2.supplyIso", 0);
    await waitFor(() => d.outputState("rack2.valve")?.quality === "good" && d.outputState("rack2.supplyIso")?.quality === "good", "verified writes");
    expect(t.sim.devices.racks[1].ctx.valveCmdPct).toBe(37.5);
    expect(t.sim.devices.racks[1].ctx.supplyIsoOpen).toBe(false);
    const writes = d.outputState("rack2.valve")!.writes;
    await waitFor(() => d.outputState("rack2.valve")!.writes >= writes + 2, "periodic refresh");
    expect(() => d.setOutput("rack2.valve", NaN)).toThrow(/not a finite number/);
    expect(() => d.setOutput("rack2.nope", 1)).toThrow(/no output/);
    expect(t.sim.devices.racks[1].ctx.valveCmdPct).toBe(37.5);
  });

  it("flags a read-back mismatch", async () => {
    // the heartbeat register accepts any write and always reads back 0: a device that does not
    // hold what it was sent, which is what read-back verification exists to catch
    const d = startDriver({ ...FAST, devices: [rack(3, { outputs: [{ name: "hb", table: "holding", address: 2, type: "u16", tolerance: 0 }] })] });
    await waitFor(() => t.sim.truth().devices.find((x) => x.name === "rack-3")?.requests !== 0, "connection");
    d.setOutput("rack3.hb", 0);
    await waitFor(() => d.outputState("rack3.hb")?.quality === "good", "0 reads back as 0");
    d.setOutput("rack3.hb", 5);
    await waitFor(() => d.outputState("rack3.hb")?.quality === "mismatch", "mismatch");
    expect(point(d, "rack3.hb")).toMatchObject({ value: 0, quality: "mismatch" });
  });

  it("writes the lease heartbeat only while the health gate is open", async () => {
    let healthy = true;
    const d = startDriver({ ...FAST, devices: [rack(4, { lease: { address: 2, periodMs: 100 } })] });
    d.setHealthGate(() => healthy);
    await waitFor(() => t.sim.truth().devices.find((x) => x.name === "rack-4")?.leaseExpired === false, "lease held");
    healthy = false;
    await waitFor(() => t.sim.truth().devices.find((x) => x.name === "rack-4")?.leaseExpired === true, "lease expired", 5000);
    await waitFor(() => t.sim.truth().racks[3].valveCommandPct === 100, "device fails its valve open");
    healthy = true;
    await waitFor(() => t.sim.truth().devices.find((x) => x.name === "rack-4")?.leaseExpired === false, "lease renewed");
  });

  it.each([
    [EXCEPTION.ILLEGAL_FUNCTION, "config"],
    [EXCEPTION.ILLEGAL_DATA_ADDRESS, "config"],
    [EXCEPTION.ILLEGAL_DATA_VALUE, "config"],
    [EXCEPTION.SERVER_DEVICE_FAILURE, "exception"],
    [EXCEPTION.ACKNOWLEDGE, "exception"],
    [EXCEPTION.SERVER_DEVICE_BUSY, "exception"],
    [EXCEPTION.NEGATIVE_ACKNOWLEDGE, "exception"],
    [EXCEPTION.MEMORY_PARITY_ERROR, "exception"],
    [9, "exception"],
    [EXCEPTION.GATEWAY_PATH_UNAVAILABLE, "offline"],
    [EXCEPTION.GATEWAY_TARGET_FAILED, "offline"],
  ])("maps exception code %i to quality %s without accepting a value", async (code, quality) => {
    const d = startDriver({ ...FAST, devices: [rack(5, { breaker: { failures: 100 } })] });
    await waitFor(() => point(d, "rack5.flowLpm")?.quality === "good", "good first");
    const good = point(d, "rack5.flowLpm")!;
    t.sim.inject({ device: "rack-5", exception: { code } });
    await waitFor(() => point(d, "rack5.flowLpm")?.quality === quality, `quality ${quality}`);
    const p = point(d, "rack5.flowLpm")!;
    expect(p.exceptionCode).toBe(code);
    expect(p.sourceTimeMs).toBe(good.sourceTimeMs); // the old value is not passed on as fresh
  });

  it("times out, opens the breaker on a dead device and recovers when it returns", async () => {
    const d = startDriver({ ...FAST, devices: [rack(6, { breaker: { failures: 2, openMs: 100, maxOpenMs: 400 } })] });
    await waitFor(() => point(d, "rack6.flowLpm")?.quality === "good", "good first");
    t.sim.inject({ device: "rack-6", offline: true });
    await waitFor(() => point(d, "rack6.flowLpm")?.quality === "offline", "offline");
    const dev = d.stats().devices[0];
    expect(dev.stats.timeouts).toBeGreaterThan(0);
    expect(dev.trips).toBeGreaterThan(0);
    expect(dev.stats.offlineSkips).toBeGreaterThan(0); // polls skipped while open, not sent
    t.sim.inject({ device: "rack-6", offline: false });
    await waitFor(() => point(d, "rack6.flowLpm")?.quality === "good", "recovered");
    expect(d.stats().devices[0].breaker).toBe("closed");
  });

  it("probes a device at the first poll after its breaker's open period: the first probe after it answers again is used", async () => {
    const d = startDriver({ ...FAST, devices: [rack(6, { breaker: { failures: 1, openMs: 200, maxOpenMs: 400 } })] });
    await waitFor(() => point(d, "rack6.flowLpm")?.quality === "good", "good first");
    t.sim.inject({ device: "rack-6", offline: true });
    // open at its longest period, and just reopened: the worst moment for the device to come back
    await waitFor(() => d.stats().devices[0].trips >= 1 && (d.stats().devices[0].breakerRetryAtMs ?? 0) - monoMs() > 150, "reopened at its longest period", 10_000, 1);
    const timeouts = d.stats().devices[0].stats.timeouts;
    const retryAt = d.stats().devices[0].breakerRetryAtMs!;
    t.sim.inject({ device: "rack-6", offline: false });
    await waitFor(() => point(d, "rack6.flowLpm")?.quality === "good", "used again");
    // no probe was lost to the outage once it was over, and none went before the breaker allowed it
    expect(d.stats().devices[0].stats.timeouts).toBe(timeouts);
    expect(point(d, "rack6.flowLpm")!.sourceTimeMs).toBeGreaterThanOrEqual(retryAt);
    expect(d.stats().devices[0].breaker).toBe("closed");
  });

  it("probes a device as soon as its connection comes back, not at the end of its breaker's open period", async () => {
    // the device went silent, its breaker opened for 2.5-5 s; then it restarted: its connection
    // reset, and it answers on the new one
    const d = startDriver({ ...FAST, devices: [rack(4, { breaker: { failures: 1, openMs: 5000, maxOpenMs: 5000 } })] });
    await waitFor(() => point(d, "rack4.flowLpm")?.quality === "good", "good first");
    t.sim.inject({ device: "rack-4", offline: true });
    await waitFor(() => d.stats().devices[0].breaker === "open", "breaker open");
    const retryAt = d.stats().devices[0].breakerRetryAtMs!;
    const timeouts = d.stats().devices[0].stats.timeouts;
    t.sim.inject({ device: "rack-4", offline: false });
    tcpTransports.get("rack4")!.drop();
    await waitFor(() => point(d, "rack4.flowLpm")?.quality === "good", "used again", 10_000);
    // used on its new connection before the breaker's own retry time (which the old code waited for)
    expect(point(d, "rack4.flowLpm")!.sourceTimeMs).toBeLessThan(retryAt);
    expect(d.stats().devices[0].stats.timeouts).toBe(timeouts);
    expect(d.stats().devices[0].breaker).toBe("closed");
  });

  it("retries a timed-out read its configured number of times before reporting the failure", async () => {
    const leakOnly = rackPoints().filter((p) => p.name === "leakState");
    const d = startDriver({ ...FAST, devices: [rack(5, { timeoutMs: 60, retries: 2, breaker: { failures: 100 }, points: leakOnly })] });
    await waitFor(() => point(d, "rack5.leakState")?.quality === "good", "good first");
    // the counters as they stand when the first failure is published: every attempt made by then
    let atFailure: { timeouts: number; retries: number } | null = null;
    d.points.subscribe((p) => {
      if (atFailure === null && p.quality === "timeout") atFailure = { timeouts: d.stats().devices[0].stats.timeouts, retries: d.stats().devices[0].stats.retries };
    });
    t.sim.inject({ device: "rack-5", offline: true });
    await waitFor(() => atFailure !== null, "the failure published");
    expect(atFailure).toEqual({ timeouts: 3, retries: 2 }); // the first attempt and two retries
    t.sim.inject({ device: "rack-5", offline: false });
    await waitFor(() => point(d, "rack5.leakState")?.quality === "good", "recovered");
  });

  it("never matches a late response to a later request", async () => {
    // answers arrive after the timeout: each is dropped, none is taken for the next request
    const d = startDriver({ ...FAST, devices: [rack(7, { timeoutMs: 60, breaker: { failures: 100 }, points: rackPoints().filter((p) => p.name === "leakState" || p.name === "supplyTempC") })] });
    await waitFor(() => point(d, "rack7.leakState")?.quality === "good", "good first");
    const seen: Point[] = [];
    d.points.subscribe((p) => seen.push(p));
    t.sim.inject({ device: "rack-7", slowMs: 90 });
    await new Promise((r) => setTimeout(r, 1000));
    t.sim.inject({ device: "rack-7", slowMs: 0 });
    await waitFor(() => point(d, "rack7.leakState")?.quality === "good", "good again");
    const good = seen.filter((p) => p.quality === "good");
    // a late answer to the input-register block would put a temperature into leakState
    for (const p of good.filter((x) => x.id === "rack7.leakState")) expect(p.value).toBe(0);
    expect(d.stats().devices[0].stats.timeouts).toBeGreaterThan(3);
    // answered and timed-out requests alike leave no record behind in the client (modbus-serial
    // keeps each until its id wraps, 256 requests later: garbage V8 promotes to its old space)
    const transport = tcpTransports.get("rack7")!;
    expect(d.stats().devices[0].stats.requests).toBeGreaterThan(8);
    expect(transport.heldTransactionRecords).toBeLessThanOrEqual(2);
  });

  it(`reconnects after the server drops every connection, ${countWords(DROPS)} times, leaking no sockets or timers`, async () => {
    const d = startDriver({ ...FAST, groups: [{ name: "control", periodMs: 1000, priority: 1 }], devices: [rack(8, { points: rackPoints().slice(0, 1) })] });
    const transport = tcpTransports.get("rack8")!;
    await waitFor(() => transport.connected, "connected");
    const resources = (): Record<string, number> => {
      const r: Record<string, number> = {};
      for (const k of process.getActiveResourcesInfo()) r[k] = (r[k] ?? 0) + 1;
      return r;
    };
    const before = resources();
    globalThis.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    for (let k = 0; k < DROPS; k++) {
      // the client may see its connect before the server has accepted: drop only what exists
      await waitFor(() => t.sim.connections() === 1, `server side of connection ${k}`, 5000, 1);
      t.sim.dropConnections();
      await waitFor(() => !transport.connected, `drop ${k}`, 2000, 1);
      await waitFor(() => transport.connected, `reconnect ${k}`, 5000, 1);
    }
    expect((transport as { connects: number }).connects).toBeGreaterThanOrEqual(DROPS + 1);
    await new Promise((r) => setTimeout(r, 50));
    const after = resources();
    expect(after.TCPSocketWrap ?? 0).toBeLessThanOrEqual(before.TCPSocketWrap ?? 0);
    expect(after.Timeout ?? 0).toBeLessThanOrEqual((before.Timeout ?? 0) + 1);
    globalThis.gc?.();
    // 20 kB a reconnect at most (20 MB over the full 1,000)
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(DROPS * 20 * 1024);
    await waitFor(() => point(d, "rack8.valveCommandPct")?.quality === "good", "still polling");
  });
});

describe("Modbus driver against pymodbus (independent server and encoder)", () => {
  let py: ChildProcess;
  let port: number;
  let layout: { address: number; type: string; order: string; value: number }[];

  beforeAll(async () => {
    port = await freePort();
    py = spawn("/usr/bin/python3", ["test/peers/pymodbus_server.py", String(port)], { stdio: ["ignore", "pipe", "inherit"] });
    const line = await new Promise<string>((resolve, reject) => {
      const rl = createInterface({ input: py.stdout! });
      rl.once("line", resolve);
      py.once("exit", (code) => reject(new Error(`pymodbus exited ${code}`)));
    });
    layout = JSON.parse(line) as typeof layout;
  });
  afterAll(async () => {
    await stopProcess(py);
  });

  it("decodes pymodbus's encoding of every data type in every byte order", async () => {
    const points = layout.map((v, i) => ({ name: `v${i}`, table: "holding", address: v.address, type: v.type, order: v.order }));
    const d = startDriver({ ...FAST, devices: [{ name: "py", unitId: 1, tcp: { port }, timeoutMs: 500, points }] });
    await waitFor(() => layout.every((_, i) => point(d, `py.v${i}`)?.quality === "good"), "all vectors", 10_000);
    layout.forEach((v, i) => {
      const got = point(d, `py.v${i}`)!.value;
      if (v.type === "f32") expect(got, `${v.type} ${v.order}`).toBeCloseTo(v.value, 4);
      else expect(got, `${v.type} ${v.order}`).toBe(v.value);
    });
  });

  it("pipelines requests on one connection when the device allows it", async () => {
    const points = Array.from({ length: 8 }, (_, i) => ({ name: `r${i}`, table: "input", address: i * 20 }));
    const d = startDriver({ ...FAST, devices: [{ name: "py", unitId: 1, tcp: { port, maxInFlight: 8 }, maxGapRegisters: 0, timeoutMs: 500, points }] });
    await waitFor(() => points.every((p) => point(d, `py.${p.name}`)?.quality === "good"), "pipelined reads");
    points.forEach((p, i) => expect(point(d, `py.${p.name}`)!.value).toBe(i * 20));
  });
});
