// Known-answer vectors for every data type and byte order, read planning, PDU checks, config rules.
import { describe, expect, it } from "vitest";
import { decodeValue, encodeValue, WORD_ORDERS, type DataType } from "../drivers/modbus/codec.js";
import { encodeRequest, parseResponse } from "../drivers/modbus/master-pdu.js";
import { fromLoopCurrent } from "../drivers/modbus/loop-current.js";
import { planReads } from "../drivers/modbus/plan.js";
import { BusyWindow } from "../drivers/modbus/busy-window.js";
import { crc16, FC } from "../drivers/modbus/protocol.js";
import { exceptionPolicy } from "../drivers/modbus/types.js";
import { ConfigError } from "../lib/config-file.js";
import { modbusConfig } from "./helpers/driver.js";

// Big-endian bytes of each value, written out by hand from IEEE 754 / two's complement.
const VECTORS: [DataType, number, number[]][] = [
  ["u16", 0xbeef, [0xbe, 0xef]],
  ["i16", -1234, [0xfb, 0x2e]],
  ["u32", 0x12345678, [0x12, 0x34, 0x56, 0x78]],
  ["i32", -2, [0xff, 0xff, 0xff, 0xfe]],
  ["f32", 123.456001281738, [0x42, 0xf6, 0xe9, 0x79]],
  ["f64", Math.PI, [0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18]],
  ["u64", 0x0123456789ab, [0x00, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab]],
  ["i64", -3, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd]],
];

/** Lays big-endian bytes into registers in the given order, independently of the codec. */
function lay(bytes: number[], order: string): number[] {
  const words: number[] = [];
  for (let i = 0; i < bytes.length; i += 2) words.push(order === "BADC" || order === "DCBA" ? (bytes[i + 1] << 8) | bytes[i] : (bytes[i] << 8) | bytes[i + 1]);
  return order === "CDAB" || order === "DCBA" ? words.reverse() : words;
}

describe("codec known-answer vectors", () => {
  for (const [type, value, bytes] of VECTORS) {
    for (const order of WORD_ORDERS) {
      it(`${type} ${order}`, () => {
        const regs = type === "u16" || type === "i16" ? lay(bytes, order === "BADC" || order === "DCBA" ? "BADC" : "ABCD") : lay(bytes, order);
        expect(encodeValue(value, type, order)).toEqual(regs);
        const decoded = decodeValue(regs, 0, type, order);
        if (type === "f32") expect(decoded).toBeCloseTo(value, 5);
        else expect(decoded).toBe(value);
      });
    }
  }

  it("decodes a bit of a register and a bool", () => {
    expect(decodeValue([0b1010_0000_0000_0100], 0, "bit", "ABCD", 2)).toBe(1);
    expect(decodeValue([0b1010_0000_0000_0100], 0, "bit", "ABCD", 3)).toBe(0);
    expect(decodeValue([0b1010_0000_0000_0100], 0, "bit", "ABCD", 15)).toBe(1);
    expect(decodeValue([7], 0, "bool")).toBe(1);
  });

  it("decodes f32 NaN from the wire (0x7FC00000) as NaN", () => {
    expect(decodeValue([0x7fc0, 0x0000], 0, "f32", "ABCD")).toBeNaN();
    expect(decodeValue([0x0000, 0x7fc0], 0, "f32", "CDAB")).toBeNaN();
  });

  it("refuses values that do not fit and reads past the end", () => {
    expect(() => encodeValue(70000, "u16")).toThrow(RangeError);
    expect(() => encodeValue(-1, "u32")).toThrow(RangeError);
    expect(() => encodeValue(NaN, "i16")).toThrow(RangeError);
    expect(() => decodeValue([1], 0, "f32")).toThrow(RangeError);
  });
});

describe("Modbus PDUs and CRC", () => {
  it("computes the CRC-16/MODBUS check value", () => {
    expect(crc16(Buffer.from("123456789"))).toBe(0x4b37);
  });

  it("accepts only the exact answer to the request sent", () => {
    const req = { fc: FC.READ_HOLDING_REGISTERS, address: 10, count: 2 } as const;
    expect(parseResponse(req, Buffer.from([3, 4, 0, 1, 0, 2]))).toEqual({ ok: true, data: [1, 2] });
    expect(parseResponse(req, Buffer.from([3, 2, 0, 1]))).toMatchObject({ ok: false, kind: "corrupt" }); // wrong count
    expect(parseResponse(req, Buffer.from([4, 4, 0, 1, 0, 2]))).toMatchObject({ ok: false, kind: "corrupt" }); // wrong fc
    expect(parseResponse(req, Buffer.from([3, 6, 0, 1, 0, 2]))).toMatchObject({ ok: false, kind: "corrupt" }); // lying byte count
    expect(parseResponse(req, Buffer.from([0x83, 2]))).toMatchObject({ ok: false, kind: "exception", code: 2 });
    const write = { fc: FC.WRITE_SINGLE_REGISTER, address: 5, value: 7 } as const;
    expect(parseResponse(write, encodeRequest(write))).toEqual({ ok: true, data: [] });
    expect(parseResponse(write, Buffer.from([6, 0, 5, 0, 8]))).toMatchObject({ ok: false, kind: "corrupt" }); // echo differs
  });

  it("maps every exception code to a quality and a retry policy", () => {
    expect(exceptionPolicy(1)).toEqual({ quality: "config", retry: false, breaker: false });
    expect(exceptionPolicy(2).quality).toBe("config");
    expect(exceptionPolicy(3).quality).toBe("config");
    expect(exceptionPolicy(4)).toEqual({ quality: "exception", retry: true, breaker: true });
    expect(exceptionPolicy(5)).toEqual({ quality: "exception", retry: true, breaker: false });
    expect(exceptionPolicy(6)).toEqual({ quality: "exception", retry: true, breaker: false });
    expect(exceptionPolicy(7).breaker).toBe(true);
    expect(exceptionPolicy(8).breaker).toBe(true);
    expect(exceptionPolicy(10)).toEqual({ quality: "offline", retry: false, breaker: true });
    expect(exceptionPolicy(11)).toEqual({ quality: "offline", retry: false, breaker: true });
    expect(exceptionPolicy(9).quality).toBe("exception"); // unassigned codes: treated as a device failure
  });
});

describe("read planning", () => {
  const device = (over: object = {}) =>
    modbusConfig({
      devices: [
        {
          name: "d",
          unitId: 1,
          tcp: { port: 1 },
          maxGapRegisters: 2,
          maxRequestRegisters: 10,
          points: [
            { name: "a", table: "input", address: 0 },
            { name: "b", table: "input", address: 1, type: "f32" },
            { name: "c", table: "input", address: 5 }, // gap of 2 after b: coalesced
            { name: "e", table: "input", address: 9 }, // gap of 3: new request
            { name: "f", table: "holding", address: 9 },
            { name: "g", table: "coil", address: 3, type: "bool" },
          ],
          ...over,
        },
      ],
    }).devices[0];

  it("coalesces across small gaps and splits at large ones, per table", () => {
    const d = device();
    const blocks = planReads(d, d.points);
    expect(blocks.map((b) => [b.table, b.request.address, b.request.count])).toEqual([
      ["coil", 3, 1],
      ["holding", 9, 1],
      ["input", 0, 6],
      ["input", 9, 1],
    ]);
    expect(blocks[2].points.map((p) => [p.point.name, p.offset])).toEqual([
      ["a", 0],
      ["b", 1],
      ["c", 5],
    ]);
  });

  it("respects the device's maximum request length", () => {
    const d = device({ maxRequestRegisters: 3 });
    const inputs = planReads(d, d.points).filter((b) => b.table === "input");
    expect(inputs.every((b) => b.request.count <= 3)).toBe(true);
    expect(inputs.flatMap((b) => b.points.map((p) => p.point.name))).toEqual(["a", "b", "c", "e"]);
  });
});

describe("Modbus config rules", () => {
  it.each([
    [{ devices: [{ name: "d", unitId: 1 }] }, /give exactly one of bus and tcp/],
    [{ devices: [{ name: "d", unitId: 1, bus: "nope" }] }, /bus: no bus named "nope"/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, points: [{ name: "p", table: "input", address: 0, group: "x" }] }] }, /group: no polling group named "x"/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, points: [{ name: "p", table: "coil", address: 0 }] }] }, /coil points are bool/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, points: [{ name: "p", table: "input", address: 0, type: "bit" }] }] }, /bit: required with type bit/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, points: [{ name: "p", table: "input", address: 65535, type: "f32" }] }] }, /runs past 65535/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, points: [{ name: "p", table: "input", address: 0, scale: 0 }] }] }, /scale/],
    [{ devices: [{ name: "d", unitId: 300, tcp: { port: 1 } }] }, /unitId: must be <= 255/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 } }, { name: "d", unitId: 2, tcp: { port: 2 } }] }, /duplicate name "d"/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, timeoutMs: Infinity }] }, /timeoutMs: must be integer/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, points: [{ name: "p", table: "input", address: 0, loop4to20: { at4mA: 5, at20mA: 5 } }] }] }, /loop4to20\.at20mA: must differ from at4mA/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, points: [{ name: "p", table: "discrete", address: 0, type: "bool", loop4to20: { at4mA: 0, at20mA: 1 } }] }] }, /loop4to20: a loop current is a register value/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, points: [{ name: "p", table: "input", address: 0, loop4to20: { at4mA: 0, at20mA: 1, faultBelowMa: 4.5 } }] }] }, /faultBelowMa: must be <= 4/],
    [{ devices: [{ name: "d", unitId: 1, tcp: { port: 1 }, points: [{ name: "p", table: "input", address: 0, loop4to20: { at20mA: 1 } }] }] }, /loop4to20\.at4mA: required key is missing/],
  ])("rejects an invalid device config (%#)", (data, reason) => {
    expect(() => modbusConfig(data)).toThrow(ConfigError);
    expect(() => modbusConfig(data)).toThrow(reason);
  });
});

describe("4–20 mA loop current", () => {
  const ne43 = { at4mA: 0, at20mA: 100, faultBelowMa: 3.6, faultAboveMa: 21 };
  it("maps 4 mA and 20 mA to the ends of the range, linearly between, a reverse range too", () => {
    expect(fromLoopCurrent(4, ne43)).toBe(0);
    expect(fromLoopCurrent(12, ne43)).toBe(50);
    expect(fromLoopCurrent(20, ne43)).toBe(100);
    // NE 43's saturation band beyond the range is still a measurement
    expect(fromLoopCurrent(3.8, ne43)).toBeCloseTo(-1.25, 12);
    expect(fromLoopCurrent(20.5, ne43)).toBeCloseTo(103.125, 12);
    expect(fromLoopCurrent(8, { ...ne43, at4mA: 400, at20mA: 0 })).toBe(300);
  });

  it.each([0, 2, 3.59, 21.01, 22, 65.535, NaN, Infinity, -Infinity])("gives no value for a failure current of %s mA", (mA) => {
    expect(fromLoopCurrent(mA, ne43)).toBeNaN();
  });
});

describe("bus busy window", () => {
  it("sums the busy time of the last second and forgets what is older", () => {
    const w = new BusyWindow();
    expect(w.total(10_000)).toBe(0);
    w.record(10_000, 2);
    w.record(10_020, 3);
    w.record(10_990, 5);
    expect(w.total(10_990)).toBe(10);
    // 1.05 s later the first two (same 50 ms slot) have left the window, the last has not
    expect(w.total(11_050)).toBe(5);
    // a slot reused a second later starts from zero, not from the old second's sum
    w.record(11_000, 1);
    expect(w.total(11_000)).toBe(6);
    expect(w.total(13_000)).toBe(0);
  });
});
