// Modbus TCP from a hostile server: a raw-socket device that answers each request, by a seeded
// choice (FUZZ_SEED), correctly, correctly but fragmented, or with a mutated frame: wrong
// transaction id, unit or function, bad byte count, bad MBAP length or protocol id, exceptions,
// truncation, garbage, duplicates, late answers and dropped connections. The driver must not
// crash, must accept no framing error as data (every good value is the value the device holds),
// and must recover when the device behaves again. (Modbus TCP has no checksum: a flipped data
// bit in an otherwise valid frame is indistinguishable from a real value; the RTU test covers
// corrupted bytes, which RTU's CRC catches.) The regression corpus (test/corpus/modbus) is a list
// of answer sequences played before the seeded ones.
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModbusDriver } from "../drivers/modbus/driver.js";
import type { Point } from "../lib/points.js";
import { modbusConfig } from "./helpers/driver.js";
import { corpus, fuzzSeed, Prng } from "./helpers/fuzz.js";
import { countWords, fullCount } from "./helpers/counts.js";
import { waitFor } from "./helpers/processes.js";

/** Generated cases: 2,000 under `npm run soak -- --full-counts`, a sixth in `npm test` (helpers/counts.ts). */
const CASES = fullCount(2_000);

/** The registers the device holds: value = 1000 + address (holding), 2000 + address (input). */
const holding = (a: number): number => 1000 + a;
const input = (a: number): number => 2000 + a;

type Strategy = "ok" | "fragmented" | "tid" | "unit" | "function" | "exception" | "bytecount" | "mbap-long" | "mbap-short" | "protocol" | "truncated" | "garbage" | "duplicate" | "late" | "close";
const STRATEGIES: [Strategy, number][] = [
  ["ok", 30],
  ["fragmented", 15],
  ["tid", 5],
  ["unit", 5],
  ["function", 5],
  ["exception", 5],
  ["bytecount", 5],
  ["mbap-long", 3],
  ["mbap-short", 4],
  ["protocol", 4],
  ["truncated", 3],
  ["garbage", 5],
  ["duplicate", 4],
  ["late", 3],
  ["close", 2],
];

function pick(rng: Prng): Strategy {
  const total = STRATEGIES.reduce((a, [, w]) => a + w, 0);
  let x = rng.next() * total;
  for (const [s, w] of STRATEGIES) if ((x -= w) < 0) return s;
  return "ok";
}

function answer(req: Buffer): Buffer {
  const tid = req.readUInt16BE(0);
  const unit = req[6];
  const fc = req[7];
  const addr = req.readUInt16BE(8);
  const qty = req.readUInt16BE(10);
  let pdu: Buffer;
  if (fc === 3 || fc === 4) {
    pdu = Buffer.alloc(2 + qty * 2);
    pdu[0] = fc;
    pdu[1] = qty * 2;
    for (let i = 0; i < qty; i++) pdu.writeUInt16BE(fc === 3 ? holding(addr + i) : input(addr + i), 2 + i * 2);
  } else {
    pdu = Buffer.from([fc | 0x80, 1]);
  }
  const out = Buffer.alloc(7 + pdu.length);
  out.writeUInt16BE(tid, 0);
  out.writeUInt16BE(0, 2);
  out.writeUInt16BE(pdu.length + 1, 4);
  out[6] = unit;
  pdu.copy(out, 7);
  return out;
}

class HostileDevice {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  hostile = true;
  /** answers to give first, in order (the regression corpus) */
  readonly script: Strategy[] = [];
  readonly used = new Map<Strategy, number>();
  port = 0;

  constructor(private readonly rng: Prng) {}

  async listen(): Promise<void> {
    this.server = createServer({ noDelay: true }, (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
      s.on("error", () => undefined);
      let buf = Buffer.alloc(0);
      s.on("data", (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        while (buf.length >= 12) {
          const len = buf.readUInt16BE(4);
          if (buf.length < 6 + len) break;
          const req = buf.subarray(0, 6 + len);
          buf = buf.subarray(6 + len);
          this.respond(s, req);
        }
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", () => r()));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** per connection: each answer's bytes go out after the previous answer's (TCP never interleaves two writes) */
  private readonly chains = new WeakMap<Socket, Promise<void>>();

  private respond(s: Socket, req: Buffer): void {
    const good = answer(req);
    const strategy = this.script.shift() ?? (this.hostile ? pick(this.rng) : "ok");
    this.used.set(strategy, (this.used.get(strategy) ?? 0) + 1);
    const rng = this.rng;
    const send = (b: Buffer): void => void (s.destroyed ? undefined : s.write(b));
    const after = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
    // queue the answer behind the one before it on this connection
    const queue = (job: () => Promise<void> | void): void => {
      const next = (this.chains.get(s) ?? Promise.resolve()).then(job);
      this.chains.set(s, next);
    };
    const write = (b: Buffer): void => queue(() => send(b));
    const bad = Buffer.from(good);
    switch (strategy) {
      case "ok":
        return write(good);
      case "fragmented": {
        // TCP may split a frame anywhere, and deliver the pieces apart: all must be reassembled
        const pieces: [Buffer, number][] = [];
        for (let at = 0; at < good.length; ) {
          const n = rng.int(1, Math.max(1, good.length - at));
          pieces.push([good.subarray(at, at + n), rng.int(0, 3)]);
          at += n;
        }
        queue(async () => {
          for (const [piece, gap] of pieces) {
            await after(gap);
            send(piece);
          }
        });
        return;
      }
      case "tid":
        bad.writeUInt16BE((bad.readUInt16BE(0) + rng.int(1, 65534)) & 0xffff, 0);
        return write(bad);
      case "unit":
        bad[6] = (bad[6] + rng.int(1, 254)) & 0xff;
        return write(bad);
      case "function":
        bad[7] = rng.pick([1, 2, 5, 6, 15, 16, 0x2b, bad[7] ^ 0x01]);
        return write(bad);
      case "exception": {
        const ex = Buffer.from(good.subarray(0, 9));
        ex.writeUInt16BE(3, 4);
        ex[7] = good[7] | 0x80;
        ex[8] = rng.int(1, 11);
        return write(ex);
      }
      case "bytecount":
        bad[8] = (bad[8] + rng.pick([-4, -2, -1, 1, 2, 4, 128])) & 0xff;
        return write(bad);
      case "mbap-long":
        bad.writeUInt16BE(bad.readUInt16BE(4) + rng.int(1, 300), 4);
        return write(bad);
      case "mbap-short":
        bad.writeUInt16BE(rng.pick([0, 1, 2, Math.max(0, bad.readUInt16BE(4) - 2)]), 4);
        return write(bad);
      case "protocol":
        bad.writeUInt16BE(rng.int(1, 65535), 2);
        return write(bad);
      case "truncated":
        return write(good.subarray(0, rng.int(1, good.length - 1)));
      case "garbage":
        return write(Buffer.from(Array.from({ length: rng.int(1, 40) }, () => rng.int(0, 255))));
      case "duplicate":
        write(good);
        return write(good);
      case "late": {
        const delay = rng.int(40, 120);
        queue(() => after(delay).then(() => send(good)));
        return;
      }
      case "close":
        s.destroy();
        return;
    }
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server === null ? r() : this.server.close(() => r())));
  }
}

describe("Modbus TCP against a hostile server", () => {
  const seed = fuzzSeed(0x0b0d_b05);
  const device = new HostileDevice(new Prng(seed));
  let driver: ModbusDriver;
  const good: Point[] = [];

  beforeAll(async () => {
    for (const { value } of corpus<{ why: string; answers: Strategy[] }>("modbus")) device.script.push(...value.answers);
    await device.listen();
    driver = new ModbusDriver(
      modbusConfig({
        groups: [{ name: "control", periodMs: 5, priority: 1 }],
        reconnect: { baseMs: 10, maxMs: 50, connectTimeoutMs: 500 },
        devices: [
          {
            name: "dev",
            unitId: 7,
            tcp: { host: "127.0.0.1", port: device.port },
            timeoutMs: 30,
            retries: 0,
            breaker: { failures: 100, openMs: 100 },
            points: [
              ...[0, 1, 2, 5, 9].map((a) => ({ name: `h${a}`, table: "holding", address: a, type: "u16", group: "control" })),
              ...[0, 3].map((a) => ({ name: `i${a}`, table: "input", address: a, type: "u16", group: "control" })),
              { name: "i10", table: "input", address: 10, type: "u32", order: "ABCD", group: "control" },
            ],
          },
        ],
      }),
    );
    driver.points.subscribe((p) => {
      if (p.quality === "good") good.push(p);
    });
    driver.start();
  });
  afterAll(async () => {
    await driver?.stop();
    await device.close();
  });

  it(`accepts no framing error as data over ${countWords(CASES)} hostile answers, and recovers`, async () => {
    const requests = (): number => [...device.used.values()].reduce((a, b) => a + b, 0);
    await waitFor(() => requests() >= CASES, `${countWords(CASES)} answers`, 120_000, 50);
    device.hostile = false;
    const truth = (id: string): number => {
      const [, table, addr] = /^dev\.([hi])(\d+)$/.exec(id)!;
      const a = Number(addr);
      if (id === "dev.i10") return input(10) * 65536 + input(11);
      return table === "h" ? holding(a) : input(a);
    };
    for (const p of good) expect(p.value, `FUZZ_SEED=${seed}: ${p.id}`).toBe(truth(p.id));
    // every kind of answer was tried, and correct ones (whole or in pieces) were accepted
    expect([...device.used.keys()].length).toBe(STRATEGIES.length);
    expect(good.length).toBeGreaterThan(300);
    // a stream that lost its framing was dropped and reconnected, not left hanging
    expect(driver.stats().buses.find((b) => b.name === "tcp:dev")!.desyncs).toBeGreaterThan(0);
    // the device behaves again: every point comes back good
    const since = performance.now();
    await waitFor(() => ["h0", "h9", "i0", "i10"].every((n) => driver.points.get(`dev.${n}`)?.quality === "good" && driver.points.get(`dev.${n}`)!.sourceTimeMs > since), "recovered", 10_000);
  }, 180_000);
});
