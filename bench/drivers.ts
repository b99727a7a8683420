// Driver figures: Modbus TCP polls/s and latency per connection against pymodbus and against a
// minimal raw-socket server, the podwarden driver path beside a minimal raw-socket client (the
// lower bound of protocol cost), sequential and pipelined; and RTU bus utilisation at 115200
// baud against the wire-time bound, through a relay that paces bytes at the wire's speed.
import { spawn } from "node:child_process";
import { createServer, Socket, type AddressInfo, type Server } from "node:net";
import { createHistogram } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { SerialPort } from "serialport";
import { Bus, newDeviceStats, type BusDevice } from "../drivers/modbus/bus.js";
import { CircuitBreaker } from "../drivers/breaker.js";
import { FC } from "../drivers/modbus/protocol.js";
import { RtuTransport } from "../drivers/modbus/rtu-transport.js";
import { TcpTransport } from "../drivers/modbus/tcp-transport.js";
import type { ModbusOutcome } from "../drivers/modbus/types.js";
import { monoMs } from "../lib/clock.js";
import { freePort } from "../tooling/free-port.js";
import { simConfig } from "../sim/config.js";
import { PodSim } from "../sim/pod-sim.js";
import { fmt } from "./stats.js";

const READ = { fc: FC.READ_INPUT_REGISTERS, address: 0, count: 10 } as const;

export interface TcpRow {
  server: string;
  client: string;
  inFlight: number;
  pollsPerS: number;
  p50Ms: number;
  p99Ms: number;
}

export interface DriverResult {
  tcp: TcpRow[];
  rtu: { pollsPerS: number; wireMsPerPoll: number; utilization: number };
}

/** The smallest Modbus TCP server: answers any FC 3/4 read with zeros, nothing else. */
async function rawServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer({ noDelay: true }, (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    let buf = Buffer.alloc(0);
    s.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 12) {
        const len = buf.readUInt16BE(4);
        if (buf.length < 6 + len) break;
        const count = buf.readUInt16BE(10);
        const out = Buffer.alloc(9 + count * 2);
        buf.copy(out, 0, 0, 4);
        out.writeUInt16BE(3 + count * 2, 4);
        out[6] = buf[6];
        out[7] = buf[7];
        out[8] = count * 2;
        s.write(out);
        buf = buf.subarray(6 + len);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A minimal raw-socket Modbus TCP client: the lower bound for one request at a time. */
async function rawClient(port: number, requests: number): Promise<{ perS: number; h: ReturnType<typeof createHistogram> }> {
  const s = new Socket();
  s.setNoDelay(true);
  await new Promise<void>((r) => s.connect(port, "127.0.0.1", () => r()));
  const req = Buffer.from([0, 0, 0, 0, 0, 6, 1, 4, 0, 0, 0, 10]);
  const h = createHistogram();
  let pending: (() => void) | null = null;
  let buf = Buffer.alloc(0);
  s.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    if (buf.length >= 6 && buf.length >= 6 + buf.readUInt16BE(4)) {
      buf = buf.subarray(6 + buf.readUInt16BE(4));
      pending?.();
    }
  });
  const one = (k: number): Promise<void> =>
    new Promise((resolve) => {
      pending = resolve;
      req.writeUInt16BE(k & 0xffff, 0);
      s.write(req);
    });
  for (let k = 0; k < 300; k++) await one(k);
  const t0 = performance.now();
  for (let k = 0; k < requests; k++) {
    const a = process.hrtime.bigint();
    await one(k);
    h.record(Number(process.hrtime.bigint() - a));
  }
  const perS = requests / ((performance.now() - t0) / 1000);
  s.destroy();
  return { perS, h };
}

function device(name: string): BusDevice {
  return { name, unitId: 1, timeoutMs: 2000, retries: 0, retryDelayMs: 0, breaker: new CircuitBreaker(1000, { baseMs: 100, maxMs: 100 }, monoMs), stats: newDeviceStats() };
}

/** The driver's own request path: Bus scheduler + TcpTransport (modbus-serial). */
async function driverClient(port: number, requests: number, inFlight: number): Promise<{ perS: number; h: ReturnType<typeof createHistogram> }> {
  const t = new TcpTransport({ host: "127.0.0.1", port, maxInFlight: inFlight, connectTimeoutMs: 2000, reconnect: { baseMs: 100, maxMs: 1000 } });
  const bus = new Bus("bench", t, 1);
  t.start();
  while (!t.connected) await new Promise((r) => setTimeout(r, 5));
  const dev = device("bench");
  const one = (): Promise<ModbusOutcome> => new Promise((done) => bus.submit({ device: dev, request: READ, priority: 1, sheddable: false, done }));
  for (let k = 0; k < 300; k++) await one();
  const h = dev.stats.latency;
  h.reset();
  const t0 = performance.now();
  let sent = 0;
  const worker = async (): Promise<void> => {
    while (sent < requests) {
      sent++;
      const o = await one();
      if (!o.ok) throw new Error(`bench request failed: ${o.message}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const perS = requests / ((performance.now() - t0) / 1000);
  await bus.stop();
  return { perS, h };
}

async function pymodbus(): Promise<{ port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const py = spawn("/usr/bin/python3", ["test/peers/pymodbus_server.py", String(port)], { stdio: ["ignore", "pipe", "ignore"] });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: py.stdout }).once("line", () => resolve());
    py.once("exit", () => reject(new Error("pymodbus did not start")));
  });
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const s = new Socket();
      s.once("error", () => r(false));
      s.connect(port, "127.0.0.1", () => {
        s.destroy();
        r(true);
      });
    });
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { port, stop: async () => void (py.kill(), await new Promise((r) => py.once("exit", r))) };
}

/** Bytes on the wire of a read of `count` registers, with the inter-frame gaps, at `baud`. */
export function rtuWireMs(count: number, baud: number): number {
  const charMs = (11 / baud) * 1000;
  const gapMs = baud > 19200 ? 1.75 : 3.5 * charMs;
  return (8 + 5 + 2 * count) * charMs + 2 * gapMs;
}

/** Copies bytes between two ports no faster than the wire would carry them, plus the gaps. */
async function pacingRelay(a: string, b: string, baud: number): Promise<() => Promise<void>> {
  const open = (path: string): Promise<SerialPort> =>
    new Promise((resolve, reject) => {
      const p = new SerialPort({ path, baudRate: baud }, (err) => (err ? reject(err) : resolve(p)));
    });
  const pa = await open(a);
  const pb = await open(b);
  const charMs = (11 / baud) * 1000;
  const gapMs = baud > 19200 ? 1.75 : 3.5 * charMs;
  let lineFreeAt = 0;
  const pace = (to: SerialPort) => (d: Buffer) => {
    const start = Math.max(monoMs(), lineFreeAt);
    lineFreeAt = start + d.length * charMs + gapMs;
    const delay = lineFreeAt - monoMs();
    setTimeout(() => to.write(d), Math.max(0, delay));
  };
  pa.on("data", pace(pb));
  pb.on("data", pace(pa));
  return async () => {
    await Promise.all([pa, pb].map((p) => new Promise<void>((r) => p.close(() => r()))));
  };
}

async function rtuUtilization(seconds: number): Promise<DriverResult["rtu"]> {
  const { ptyPair } = await import("../test/helpers/processes.js");
  const master = await ptyPair();
  const slave = await ptyPair();
  const baud = 115200;
  const sim = new PodSim(simConfig({ devices: { basePort: 0, leaseMs: 0, rtu: { path: slave.b, baudRate: baud } } }));
  await sim.start();
  const closeRelay = await pacingRelay(master.b, slave.a, baud);
  const t = new RtuTransport({ path: master.a, baudRate: baud, framing: { dataBits: 8, parity: "none", stopBits: 1 }, rs485: "none", guardMs: 20, interFrameMs: 20, reconnect: { baseMs: 100, maxMs: 1000 } });
  const bus = new Bus("rtu", t, 1);
  t.start();
  while (!t.connected) await new Promise((r) => setTimeout(r, 5));
  const dev = { ...device("rack"), unitId: 11 };
  const read = { fc: FC.READ_INPUT_REGISTERS, address: 0, count: 10 } as const;
  const one = (): Promise<ModbusOutcome> => new Promise((done) => bus.submit({ device: dev, request: read, priority: 1, sheddable: false, done }));
  for (let k = 0; k < 20; k++) await one();
  let ok = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000) if ((await one()).ok) ok++;
  const perS = ok / ((performance.now() - t0) / 1000);
  await bus.stop();
  await closeRelay();
  await sim.stop();
  await master.stop();
  await slave.stop();
  const wire = rtuWireMs(10, baud);
  return { pollsPerS: perS, wireMsPerPoll: wire, utilization: (perS * wire) / 1000 };
}

export async function runDriverBench(quick = false): Promise<DriverResult> {
  const n = quick ? 2000 : 10000;
  const tcp: TcpRow[] = [];
  const row = (server: string, client: string, inFlight: number, r: { perS: number; h: ReturnType<typeof createHistogram> }): TcpRow => ({
    server,
    client,
    inFlight,
    pollsPerS: r.perS,
    p50Ms: r.h.percentile(50) / 1e6,
    p99Ms: r.h.percentile(99) / 1e6,
  });
  const raw = await rawServer();
  try {
    tcp.push(row("raw-socket server", "raw-socket client", 1, await rawClient(raw.port, n)));
    tcp.push(row("raw-socket server", "podwarden driver", 1, await driverClient(raw.port, n, 1)));
    tcp.push(row("raw-socket server", "podwarden driver", 8, await driverClient(raw.port, n * 2, 8)));
  } finally {
    await raw.close();
  }
  const py = await pymodbus();
  try {
    tcp.push(row("pymodbus", "raw-socket client", 1, await rawClient(py.port, n)));
    tcp.push(row("pymodbus", "podwarden driver", 1, await driverClient(py.port, n, 1)));
    tcp.push(row("pymodbus", "podwarden driver", 8, await driverClient(py.port, n * 2, 8)));
  } finally {
    await py.stop();
  }
  return { tcp, rtu: await rtuUtilization(quick ? 3 : 10) };
}

export function printDrivers(r: DriverResult): void {
  console.log("\n## drivers: Modbus TCP, one connection, FC 4 x 10 registers, loopback");
  console.log("| server | client | in flight | polls/s | p50 ms | p99 ms | vs raw client |");
  console.log("|---|---|---:|---:|---:|---:|---:|");
  for (const row of r.tcp) {
    const base = r.tcp.find((x) => x.server === row.server && x.client === "raw-socket client")!;
    console.log(`| ${row.server} | ${row.client} | ${row.inFlight} | ${fmt(row.pollsPerS, 0)} | ${fmt(row.p50Ms, 3)} | ${fmt(row.p99Ms, 3)} | ${fmt((100 * row.pollsPerS) / base.pollsPerS, 0)} % |`);
  }
  console.log("\n## drivers: Modbus RTU at 115200 baud (pty pair through a relay pacing bytes at wire speed)");
  console.log(`FC 4 x 10 registers: wire-time bound ${fmt(r.rtu.wireMsPerPoll, 2)} ms per poll (${fmt(1000 / r.rtu.wireMsPerPoll, 0)} polls/s); achieved ${fmt(r.rtu.pollsPerS, 0)} polls/s = **${fmt(100 * r.rtu.utilization, 0)} % bus utilisation**`);
}
