// Slave side of the Modbus application protocol: one request PDU in, one response PDU out.
// Transport framing (MBAP, RTU CRC) lives in the servers; this file only knows function codes.
import { EXCEPTION, FC, MAX_READ_BITS, MAX_READ_REGISTERS, MAX_WRITE_BITS, MAX_WRITE_REGISTERS } from "../../drivers/modbus/protocol.js";

/** What a device exposes to the protocol. Each call returns the data, or an exception code. */
export interface SlaveDataModel {
  readBits(table: "coil" | "discrete", address: number, count: number): number[] | number;
  readRegisters(table: "holding" | "input", address: number, count: number): number[] | number;
  writeBits(address: number, values: number[]): number | undefined;
  writeRegisters(address: number, values: number[]): number | undefined;
}

export function exceptionPdu(fc: number, code: number): Buffer {
  return Buffer.from([fc | 0x80, code]);
}

function packBits(bits: number[]): Buffer {
  const out = Buffer.alloc(Math.ceil(bits.length / 8));
  bits.forEach((b, i) => {
    if (b) out[i >> 3] |= 1 << (i & 7);
  });
  return out;
}

/** Handles one request PDU (function code first). Never throws on malformed input. */
export function handlePdu(model: SlaveDataModel, pdu: Buffer): Buffer {
  if (pdu.length < 1) return exceptionPdu(0, EXCEPTION.ILLEGAL_FUNCTION);
  const fc = pdu[0];
  const fail = (code: number): Buffer => exceptionPdu(fc, code);
  const u16 = (off: number): number => pdu.readUInt16BE(off);
  switch (fc) {
    case FC.READ_COILS:
    case FC.READ_DISCRETE_INPUTS: {
      if (pdu.length !== 5) return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      const count = u16(3);
      if (count < 1 || count > MAX_READ_BITS) return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      const r = model.readBits(fc === FC.READ_COILS ? "coil" : "discrete", u16(1), count);
      if (typeof r === "number") return fail(r);
      const data = packBits(r);
      return Buffer.concat([Buffer.from([fc, data.length]), data]);
    }
    case FC.READ_HOLDING_REGISTERS:
    case FC.READ_INPUT_REGISTERS: {
      if (pdu.length !== 5) return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      const count = u16(3);
      if (count < 1 || count > MAX_READ_REGISTERS) return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      const r = model.readRegisters(fc === FC.READ_HOLDING_REGISTERS ? "holding" : "input", u16(1), count);
      if (typeof r === "number") return fail(r);
      const out = Buffer.alloc(2 + r.length * 2);
      out[0] = fc;
      out[1] = r.length * 2;
      r.forEach((v, i) => out.writeUInt16BE(v & 0xffff, 2 + i * 2));
      return out;
    }
    case FC.WRITE_SINGLE_COIL: {
      if (pdu.length !== 5) return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      const v = u16(3);
      if (v !== 0xff00 && v !== 0x0000) return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      const e = model.writeBits(u16(1), [v === 0xff00 ? 1 : 0]);
      return e === undefined ? Buffer.from(pdu) : fail(e);
    }
    case FC.WRITE_SINGLE_REGISTER: {
      if (pdu.length !== 5) return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      const e = model.writeRegisters(u16(1), [u16(3)]);
      return e === undefined ? Buffer.from(pdu) : fail(e);
    }
    case FC.WRITE_MULTIPLE_COILS: {
      if (pdu.length < 6) return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      const count = u16(3);
      const bytes = pdu[5];
      if (count < 1 || count > MAX_WRITE_BITS || bytes !== Math.ceil(count / 8) || pdu.length !== 6 + bytes) {
        return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      }
      const bits: number[] = [];
      for (let i = 0; i < count; i++) bits.push((pdu[6 + (i >> 3)] >> (i & 7)) & 1);
      const e = model.writeBits(u16(1), bits);
      return e === undefined ? pdu.subarray(0, 5) : fail(e);
    }
    case FC.WRITE_MULTIPLE_REGISTERS: {
      if (pdu.length < 6) return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      const count = u16(3);
      const bytes = pdu[5];
      if (count < 1 || count > MAX_WRITE_REGISTERS || bytes !== count * 2 || pdu.length !== 6 + bytes) {
        return fail(EXCEPTION.ILLEGAL_DATA_VALUE);
      }
      const values: number[] = [];
      for (let i = 0; i < count; i++) values.push(u16(6 + i * 2));
      const e = model.writeRegisters(u16(1), values);
      return e === undefined ? pdu.subarray(0, 5) : fail(e);
    }
    default:
      return fail(EXCEPTION.ILLEGAL_FUNCTION);
  }
}
