// The simulator's field devices over real wires: Modbus TCP (modbus-serial as master, and the
// third-party mbpoll), Modbus RTU over a socat pty pair, and the HTTP control interface.
import { ModbusClient } from "../drivers/modbus/modbus-serial.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { decodeValue, encodeValue } from "../drivers/modbus/codec.js";
import { EXCEPTION } from "../drivers/modbus/protocol.js";
import { PodSim } from "../sim/pod-sim.js";
import { simConfig } from "../sim/config.js";
import { RACK_STATUS } from "../sim/devices/pod-devices.js";
import { ptyPair, run, waitFor, type PtyPair } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";

async function tcpMaster(port: number, unit: number, timeoutMs = 1000): Promise<ModbusClient> {
  const m = new ModbusClient();
  await m.connectTCP("127.0.0.1", { port });
  m.setID(unit);
  m.setTimeout(timeoutMs);
  return m;
}
const closeMaster = (m: ModbusClient): Promise<void> => new Promise((r) => m.close(() => r()));

describe("simulated devices over Modbus TCP", () => {
  let t: TestSim;
  const masters: ModbusClient[] = [];
  const master = async (device: string, unit: number, timeoutMs?: number): Promise<ModbusClient> => {
    const m = await tcpMaster(t.port(device), unit, timeoutMs);
    masters.push(m);
    return m;
  };

  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 500 } });
  });
  afterEach(async () => {
    await Promise.all(masters.splice(0).map(closeMaster));
    t.sim.inject({ clear: "all" });
  });
  afterAll(async () => {
    await t.stop();
  });

  it("reports what the plant holds, in the documented encodings", async () => {
    const m = await master("rack-3", 13);
    const regs = (await m.readInputRegisters(0, 11)).data;
    const truth = t.sim.truth().racks[2];
    expect(decodeValue(regs, 0, "i16") * 0.1).toBeCloseTo(truth.valvePct, 0);
    expect(decodeValue(regs, 1, "f32", "CDAB")).toBeGreaterThan(0); // flow, word-swapped float
    expect(decodeValue(regs, 4, "i16") * 0.01).toBeGreaterThan(20); // return temperature, scaled int16
    expect(decodeValue(regs, 7, "u16")).toBe(0); // leak: dry
    const cdu = await master("cdu", 1);
    const c = (await cdu.readInputRegisters(0, 17)).data;
    expect(decodeValue(c, 2, "f32", "ABCD")).toBeCloseTo(t.sim.truth().cdu.dpKpa, -1);
  });

  it("answers an unmapped address with exception 2 and an injected fault with its code", async () => {
    const m = await master("rack-1", 11);
    await expect(m.readInputRegisters(500, 2)).rejects.toMatchObject({ modbusCode: EXCEPTION.ILLEGAL_DATA_ADDRESS });
    t.sim.inject({ device: "rack-1", exception: { code: EXCEPTION.SERVER_DEVICE_BUSY, functions: [4] } });
    await expect(m.readInputRegisters(0, 2)).rejects.toMatchObject({ modbusCode: EXCEPTION.SERVER_DEVICE_BUSY });
    await expect(m.readHoldingRegisters(0, 2)).resolves.toBeDefined(); // only FC 4 is faulted
  });

  it("stays silent while offline and answers late while slow", async () => {
    const m = await master("rack-2", 12, 300);
    t.sim.inject({ device: "rack-2", offline: true });
    await expect(m.readInputRegisters(0, 1)).rejects.toThrow(/Timed out/i);
    t.sim.inject({ device: "rack-2", offline: false, slowMs: 600 });
    await expect(m.readInputRegisters(0, 1)).rejects.toThrow(/Timed out/i);
    t.sim.inject({ device: "rack-2", slowMs: 0 });
    // the late answer to the timed-out request must not satisfy this one: a new connection
    const fresh = await master("rack-2", 12, 1000);
    await expect(fresh.readInputRegisters(7, 1)).resolves.toMatchObject({ data: [0] });
  });

  it("resets its connection after every n-th answer while told to, and counts the resets", async () => {
    // not in `masters`: its connection is reset under it, there is nothing to close
    const m = await tcpMaster(t.port("rack-3"), 13, 1000);
    t.sim.inject({ device: "rack-3", resetEvery: 2 });
    // the first answer comes; the second comes too, and then the reset
    await expect(m.readInputRegisters(7, 1)).resolves.toMatchObject({ data: [0] });
    await expect(m.readInputRegisters(7, 1)).resolves.toMatchObject({ data: [0] });
    await waitFor(() => !m.isOpen, "the connection reset after the second answer", 5000, 10);
    const dev = t.sim.truth().devices.find((d) => d.name === "rack-3");
    expect(dev).toMatchObject({ resets: 1, resetEvery: 2 });
    // a new connection is answered (and reset in its turn); cleared, it stays open
    const fresh = await master("rack-3", 13, 1000);
    t.sim.inject({ device: "rack-3", resetEvery: 0 });
    for (let k = 0; k < 5; k++) await expect(fresh.readInputRegisters(7, 1)).resolves.toMatchObject({ data: [0] });
    expect(fresh.isOpen).toBe(true);
    expect(t.sim.truth().racks[2].connections).toBe(1);
  });

  it("applies sensor faults to what the device reports", async () => {
    const m = await master("rack-4", 14);
    t.sim.inject({ sensor: "rack-4.flowLpm", fault: "nan" });
    expect(decodeValue((await m.readInputRegisters(1, 2)).data, 0, "f32", "CDAB")).toBeNaN();
    t.sim.inject({ sensor: "rack-4.returnTempC", fault: "nan" });
    expect(decodeValue((await m.readInputRegisters(4, 1)).data, 0, "i16")).toBe(-32768); // int16 "invalid"
    t.sim.inject({ sensor: "rack-4.returnTempC", fault: "value", value: 500 });
    expect(decodeValue((await m.readInputRegisters(4, 1)).data, 0, "i16")).toBe(32767); // saturates
  });

  it("drives valves to their fail positions when the heartbeat lease expires", async () => {
    const m = await master("rack-5", 15);
    // command 30 % and keep the lease alive for a while
    await m.writeRegisters(0, encodeValue(30, "f32", "CDAB"));
    for (let k = 0; k < 8; k++) {
      await m.writeRegister(2, k);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(t.sim.truth().racks[4].valveCommandPct).toBe(30);
    const status = (await m.readInputRegisters(9, 1)).data[0];
    expect(status & RACK_STATUS.LEASE_EXPIRED).toBe(0);
    // stop the heartbeat: within the 500 ms lease the device fails its valve open on its own
    await waitFor(() => t.sim.truth().racks[4].valveCommandPct === 100, "fail position");
    expect((await m.readInputRegisters(9, 1)).data[0] & RACK_STATUS.LEASE_EXPIRED).toBeTruthy();
    expect(t.sim.truth().devices.find((d) => d.name === "rack-5")?.leaseExpired).toBe(true);
    // a heartbeat restores the commanded position
    await m.writeRegister(2, 99);
    await waitFor(() => t.sim.truth().racks[4].valveCommandPct === 30, "command restored");
  });

  it("keeps isolation valves where they are when the lease expires (default hold)", async () => {
    const m = await master("rack-6", 16);
    await m.writeRegister(2, 1);
    await m.writeCoil(0, false);
    await m.writeCoil(1, false);
    await waitFor(() => t.sim.truth().racks[5].supplyIsolationPct === 0, "isolation closed");
    await waitFor(() => t.sim.truth().devices.find((d) => d.name === "rack-6")?.leaseExpired === true, "lease expiry");
    await new Promise((r) => setTimeout(r, 300));
    expect(t.sim.truth().racks[5].supplyIsolationPct).toBe(0);
    expect(t.sim.truth().racks[5].returnIsolationPct).toBe(0);
  });

  it("records when each device last saw a write", async () => {
    const m = await master("rack-7", 17);
    const before = t.sim.truth().devices.find((d) => d.name === "rack-7")!;
    await m.writeRegister(2, 1);
    const after = t.sim.truth().devices.find((d) => d.name === "rack-7")!;
    expect(after.lastWriteAtMs).not.toBeNull();
    expect(after.lastWriteAtMs!).toBeGreaterThan(before.lastWriteAtMs ?? -1);
  });

  it("is read and written by a third-party master (mbpoll)", async () => {
    const port = String(t.port("rack-8"));
    // input registers 1..11 (mbpoll counts from 1): valve position is scaled int16
    const read = await run("mbpoll", ["-m", "tcp", "-a", "18", "-p", port, "-t", "3", "-r", "1", "-c", "11", "-1", "127.0.0.1"]);
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout).toMatch(/\[8\]:\s+0\b/); // leak state dry
    // holding registers 1-2: valve command, float32 in CDAB order (mbpoll's default word order)
    const write = await run("mbpoll", ["-m", "tcp", "-a", "18", "-p", port, "-t", "4:float", "-r", "1", "-1", "127.0.0.1", "42.5"]);
    expect(write.code, write.stderr).toBe(0);
    const readBack = await run("mbpoll", ["-m", "tcp", "-a", "18", "-p", port, "-t", "4:float", "-r", "1", "-c", "1", "-1", "127.0.0.1"]);
    expect(readBack.stdout).toMatch(/\[1\]:\s+42\.5/);
    // coil 1: supply isolation valve
    const coil = await run("mbpoll", ["-m", "tcp", "-a", "18", "-p", port, "-t", "0", "-r", "1", "-1", "127.0.0.1", "0"]);
    expect(coil.code, coil.stderr).toBe(0);
    expect(t.sim.devices.racks[7].ctx.supplyIsoOpen).toBe(false);
  });
});

describe("simulated devices over Modbus RTU (socat pty pair)", () => {
  let pty: PtyPair;
  let sim: PodSim;
  let m: ModbusClient;

  beforeAll(async () => {
    pty = await ptyPair();
    sim = new PodSim(simConfig({ devices: { basePort: 0, rtu: { path: pty.a, baudRate: 115200 } } }));
    await sim.start();
    m = new ModbusClient();
    await m.connectRTUBuffered(pty.b, { baudRate: 115200 });
    m.setTimeout(500);
  });
  afterAll(async () => {
    await new Promise<void>((r) => m.close(() => r()));
    await sim.stop();
    await pty.stop();
  });

  it("serves every device on one bus by unit id", async () => {
    m.setID(1);
    const cdu = (await m.readInputRegisters(0, 2)).data;
    expect(decodeValue(cdu, 0, "f32", "ABCD")).toBeGreaterThan(0);
    m.setID(13);
    await m.writeRegisters(0, encodeValue(55, "f32", "CDAB"));
    expect(sim.devices.racks[2].ctx.valveCmdPct).toBe(55);
    m.setID(99);
    await expect(m.readInputRegisters(0, 1)).rejects.toThrow(/Timed out/i);
  });
});

describe("the live control interface", () => {
  let t: TestSim;
  beforeAll(async () => {
    t = await startTestSim();
  });
  afterAll(async () => {
    await t.stop();
  });

  const post = async (path: string, body: string): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(`${t.controlUrl}${path}`, { method: "POST", body });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it("injects faults and reports ground truth", async () => {
    expect((await post("/fault", JSON.stringify({ leak: "rack-2" }))).status).toBe(200);
    await waitFor(async () => {
      const truth = (await (await fetch(`${t.controlUrl}/truth`)).json()) as { racks: { leak: string; coolantLostL: number }[] };
      return truth.racks[1].leak === "wet" && truth.racks[1].coolantLostL > 0;
    }, "coolant loss");
    expect((await post("/clear", "")).status).toBe(200);
    expect(t.sim.plant.racks[1].leak).toBe("dry");
  });

  it.each([
    ["not JSON", "{leak:", /not JSON/],
    ["unknown key", JSON.stringify({ flood: "rack-1" }), /flood: unknown key/],
    ["two actions", JSON.stringify({ leak: "rack-1", pumpTrip: true }), /exactly one/],
    ["unknown rack", JSON.stringify({ leak: "rack-42" }), /no rack "rack-42"/],
    ["bad value", JSON.stringify({ load: "rack-1", pct: 250 }), /pct: must be <= 100/],
    ["missing companion", JSON.stringify({ sensor: "rack-1.flowLpm" }), /fault: required/],
  ])("rejects %s with a 400 and a reason, changing nothing", async (_what, body, reason) => {
    const before = JSON.stringify(t.sim.truth().racks.map((r) => [r.leak, r.demandPct]));
    const r = await post("/fault", body);
    expect(r.status).toBe(400);
    expect(String(r.json.error)).toMatch(reason);
    expect(JSON.stringify(t.sim.truth().racks.map((x) => [x.leak, x.demandPct]))).toBe(before);
  });

  it("answers unknown routes with 404", async () => {
    expect((await fetch(`${t.controlUrl}/nope`)).status).toBe(404);
  });
});
