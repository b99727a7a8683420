// Engineering values to and from register words, as configured per point and output: the one
// place a point's scale, offset, invalid sentinel and 4–20 mA conversion are applied, and an
// output's words and write request are made. The driver uses it on the wire; the virtual pod
// uses it against simulated devices in virtual time, so both read and write alike.
import { decodeValue, encodeValue } from "./codec.js";
import type { OutputConfig, PointConfig } from "./config.js";
import { failureCurrentWords, fromLoopCurrent } from "./loop-current.js";
import { FC } from "./protocol.js";
import type { ModbusRequest } from "./types.js";

export interface DecodedPoint {
  value: number;
  quality: "good" | "invalid" | "corrupt";
  /** a 4–20 mA point's loop current as read, mA */
  loopCurrentMa?: number;
  /** a failure current in words */
  detail?: string;
}

/** A point's engineering value from the words (or bits) of a read, at `offset`. */
export function decodePoint(point: PointConfig, words: readonly number[], offset: number): DecodedPoint {
  try {
    const raw = decodeValue(words, offset, point.table === "coil" || point.table === "discrete" ? "bool" : point.type, point.order, point.bit ?? 0);
    let value = raw * point.scale + point.offset;
    let current: { loopCurrentMa: number; detail?: string } | undefined;
    if (point.loop4to20 !== undefined) {
      // the current goes along, so an operator sees what a failure current was, not just "invalid"
      const fault = failureCurrentWords(value, point.loop4to20);
      current = fault === null ? { loopCurrentMa: value } : { loopCurrentMa: value, detail: fault };
      value = fromLoopCurrent(value, point.loop4to20);
    }
    const invalid = !Number.isFinite(value) || (point.invalidRaw !== undefined && raw === point.invalidRaw);
    return { value, quality: invalid ? "invalid" : "good", ...current };
  } catch {
    return { value: NaN, quality: "corrupt" };
  }
}

/** The words (or the one bit) an output value is written as. */
export function encodeOutput(c: OutputConfig, value: number): number[] {
  return c.table === "coil" ? [value !== 0 ? 1 : 0] : encodeValue((value - c.offset) / c.scale, c.type, c.order);
}

/** The request that writes an output's words. */
export function writeRequest(c: OutputConfig, raw: number[]): ModbusRequest {
  if (c.table === "coil") return { fc: FC.WRITE_SINGLE_COIL, address: c.address, value: raw[0] };
  return raw.length === 1 ? { fc: FC.WRITE_SINGLE_REGISTER, address: c.address, value: raw[0] } : { fc: FC.WRITE_MULTIPLE_REGISTERS, address: c.address, values: raw };
}
