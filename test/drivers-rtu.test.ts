// The Modbus driver over real serial RTU: socat pty pairs to the simulator's RTU bus, with a
// relay in between that corrupts CRCs, truncates frames and adds garbage. No corrupt frame may
// be accepted, and a slow device must not take the bus from a fast one.
import { SerialPort } from "serialport";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ModbusDriver } from "../drivers/modbus/driver.js";
import type { Point } from "../drivers/points.js";
import { simConfig } from "../sim/config.js";
import { PodSim } from "../sim/pod-sim.js";
import { Prng } from "../sim/prng.js";
import { modbusConfig } from "./helpers/driver.js";
import { ptyPair, waitFor, type PtyPair } from "./helpers/processes.js";

/** Copies bytes between two serial ports, damaging some of the slave's answers. */
class CorruptingRelay {
  damaged = 0;
  private readonly rng = new Prng(1234);
  private constructor(
    private readonly master: SerialPort,
    private readonly slave: SerialPort,
    private readonly rate: number,
  ) {
    master.on("data", (b: Buffer) => slave.write(b));
    slave.on("data", (b: Buffer) => master.write(this.damage(b)));
  }

  static async open(masterSide: string, slaveSide: string, rate: number): Promise<CorruptingRelay> {
    const open = (path: string): Promise<SerialPort> =>
      new Promise((resolve, reject) => {
        const p = new SerialPort({ path, baudRate: 115200 }, (err) => (err ? reject(err) : resolve(p)));
      });
    return new CorruptingRelay(await open(masterSide), await open(slaveSide), rate);
  }

  private damage(b: Buffer): Buffer {
    if (!this.rng.chance(this.rate)) return b;
    this.damaged++;
    const out = Buffer.from(b);
    switch (this.rng.int(0, 3)) {
      case 0: // flip one bit anywhere: the CRC no longer matches
        out[this.rng.int(0, out.length - 1)] ^= 1 << this.rng.int(0, 7);
        return out;
      case 1: // truncated frame
        return out.subarray(0, this.rng.int(1, Math.max(1, out.length - 1)));
      case 2: // garbage before the frame
        return Buffer.concat([Buffer.from([this.rng.int(0, 255), this.rng.int(0, 255)]), out]);
      default: // garbage after the frame
        return Buffer.concat([out, Buffer.from([this.rng.int(0, 255)])]);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.master, this.slave].map((p) => new Promise<void>((r) => (p.isOpen ? p.close(() => r()) : r()))));
  }
}

const STATIC_POINTS = [
  { name: "valveCommandPct", table: "holding", address: 0, type: "f32", order: "CDAB" },
  { name: "leaseMs", table: "holding", address: 3, type: "u16" },
  { name: "failValvePct", table: "holding", address: 4, type: "f32", order: "CDAB" },
  { name: "leakState", table: "input", address: 7, type: "u16" },
];

describe("Modbus RTU over a corrupting relay", () => {
  let toDriver: PtyPair;
  let toSim: PtyPair;
  let relay: CorruptingRelay;
  let sim: PodSim;
  let driver: ModbusDriver;

  beforeAll(async () => {
    toDriver = await ptyPair();
    toSim = await ptyPair();
    sim = new PodSim(simConfig({ devices: { basePort: 0, leaseMs: 0, rtu: { path: toSim.b, baudRate: 115200 } } }));
    await sim.start();
    relay = await CorruptingRelay.open(toDriver.b, toSim.a, 0.3);
  });
  afterEach(async () => {
    await driver?.stop();
    sim.inject({ clear: "all" });
  });
  afterAll(async () => {
    await relay.close();
    await sim.stop();
    await toSim.stop();
    await toDriver.stop();
  });

  it("accepts no corrupt frame: every good value is the value the device holds", async () => {
    driver = new ModbusDriver(
      modbusConfig({
        groups: [{ name: "control", periodMs: 30, priority: 1 }],
        buses: [{ name: "rs485", path: toDriver.a, baudRate: 115200, guardMs: 30, interFrameMs: 10 }],
        devices: [1, 2, 3].map((n) => ({ name: `rack${n}`, bus: "rs485", unitId: 10 + n, timeoutMs: 80, retries: 0, maxGapRegisters: 0, breaker: { failures: 50 }, points: STATIC_POINTS })),
      }),
    );
    const good: Point[] = [];
    const bad: Point[] = [];
    driver.points.subscribe((p) => (p.quality === "good" ? good : bad).push(p));
    driver.start();
    await waitFor(() => good.length > 300 && relay.damaged > 60, "enough traffic through the relay", 60_000);
    const expected: Record<string, number> = { valveCommandPct: 70, leaseMs: 0, failValvePct: 100, leakState: 0 };
    for (const p of good) expect(p.value, p.id).toBe(expected[p.id.split(".")[1]]);
    const corrupt = driver.stats().devices.reduce((n, d) => n + d.stats.corrupt + d.stats.timeouts, 0);
    expect(corrupt).toBeGreaterThan(30);
    expect(bad.some((p) => p.quality === "corrupt")).toBe(true);
  });
});

describe("Modbus RTU bus sharing", () => {
  let pty: PtyPair;
  let sim: PodSim;
  let driver: ModbusDriver;

  beforeAll(async () => {
    pty = await ptyPair();
    sim = new PodSim(simConfig({ devices: { basePort: 0, leaseMs: 0, rtu: { path: pty.b, baudRate: 115200 } } }));
    await sim.start();
  });
  afterAll(async () => {
    await driver?.stop();
    await sim.stop();
    await pty.stop();
  });

  it("keeps a fast device polled while a slow device on the same bus is cut off by its breaker", async () => {
    sim.inject({ device: "rack-1", slowMs: 400 });
    driver = new ModbusDriver(
      modbusConfig({
        groups: [{ name: "control", periodMs: 50, priority: 1 }],
        buses: [{ name: "rs485", path: pty.a, baudRate: 115200, guardMs: 20 }],
        devices: [
          { name: "slow", bus: "rs485", unitId: 11, timeoutMs: 60, retries: 0, breaker: { failures: 2, openMs: 5000, maxOpenMs: 10000 }, points: STATIC_POINTS.slice(3) },
          // a timeout well above the fast device's few-ms answer: this test is about sharing the
          // bus, and the simulator answering from this test's own event loop must not turn a
          // pause of the loop (a collection, a busy machine) into failed polls
          // and a breaker that the slow device's late answers cannot open: each one (400 ms after
          // its request, long after the bus guard) garbles whatever fast reply is on the wire, and
          // three in a row before the slow breaker opened once opened this one too (CI, loaded)
          { name: "fast", bus: "rs485", unitId: 12, timeoutMs: 250, retries: 0, breaker: { failures: 10 }, points: STATIC_POINTS.slice(3) },
        ],
      }),
    );
    let fastGood = 0;
    const fastFailed: string[] = [];
    driver.points.subscribe((p) => {
      if (p.id === "fast.leakState" && p.quality === "good") fastGood++;
      else if (p.id === "fast.leakState") fastFailed.push(p.quality);
    });
    driver.start();
    await waitFor(() => driver.points.get("slow.leakState")?.quality === "offline", "slow device cut off");
    const polls0 = driver.stats().polls.find((p) => p.device === "fast")!.polls;
    const good0 = fastGood;
    const failed0 = fastFailed.length;
    await new Promise((r) => setTimeout(r, 2000));
    const polls = driver.stats().polls.find((p) => p.device === "fast")!.polls - polls0;
    // the fast device answered nearly every poll it was due, and was due about every 50 ms; the
    // breaker stays open for 5 s, so no probe of the slow device (which costs the bus a timeout
    // and can garble the next reply with a late answer) falls inside this 2 s window
    expect(fastGood - good0, `fast device: ${fastGood - good0} good of ${polls} polls; failures: ${fastFailed.slice(failed0).join(", ")}`).toBeGreaterThanOrEqual(Math.floor(polls * 0.9));
    expect(polls).toBeGreaterThan(10);
    expect(driver.stats().devices.find((d) => d.name === "slow")!.trips).toBeGreaterThan(0);
  });
});
