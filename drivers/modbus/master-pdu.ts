// Master side of the Modbus application protocol: request PDUs out, response PDUs checked and
// decoded. Anything that does not answer exactly the request that was sent is "corrupt".
import { FC } from "./protocol.js";
import type { ModbusOutcome, ModbusRequest } from "./types.js";

export function encodeRequest(r: ModbusRequest): Buffer {
  switch (r.fc) {
    case FC.READ_COILS:
    case FC.READ_DISCRETE_INPUTS:
    case FC.READ_HOLDING_REGISTERS:
    case FC.READ_INPUT_REGISTERS: {
      const b = Buffer.alloc(5);
      b[0] = r.fc;
      b.writeUInt16BE(r.address, 1);
      b.writeUInt16BE(r.count, 3);
      return b;
    }
    case FC.WRITE_SINGLE_COIL:
    case FC.WRITE_SINGLE_REGISTER: {
      const b = Buffer.alloc(5);
      b[0] = r.fc;
      b.writeUInt16BE(r.address, 1);
      b.writeUInt16BE(r.fc === FC.WRITE_SINGLE_COIL ? (r.value !== 0 ? 0xff00 : 0) : r.value & 0xffff, 3);
      return b;
    }
    case FC.WRITE_MULTIPLE_COILS: {
      const bytes = Math.ceil(r.values.length / 8);
      const b = Buffer.alloc(6 + bytes);
      b[0] = r.fc;
      b.writeUInt16BE(r.address, 1);
      b.writeUInt16BE(r.values.length, 3);
      b[5] = bytes;
      r.values.forEach((v, i) => {
        if (v !== 0) b[6 + (i >> 3)] |= 1 << (i & 7);
      });
      return b;
    }
    case FC.WRITE_MULTIPLE_REGISTERS: {
      const b = Buffer.alloc(6 + r.values.length * 2);
      b[0] = r.fc;
      b.writeUInt16BE(r.address, 1);
      b.writeUInt16BE(r.values.length, 3);
      b[5] = r.values.length * 2;
      r.values.forEach((v, i) => b.writeUInt16BE(v & 0xffff, 6 + i * 2));
      return b;
    }
  }
}

/** Byte length of the normal response PDU to this request. */
export function responseLength(r: ModbusRequest): number {
  switch (r.fc) {
    case FC.READ_COILS:
    case FC.READ_DISCRETE_INPUTS:
      return 2 + Math.ceil(r.count / 8);
    case FC.READ_HOLDING_REGISTERS:
    case FC.READ_INPUT_REGISTERS:
      return 2 + r.count * 2;
    default:
      return 5;
  }
}

/** Checks a complete response PDU against its request and decodes it. */
export function parseResponse(r: ModbusRequest, pdu: Uint8Array): ModbusOutcome {
  const corrupt = (why: string): ModbusOutcome => ({ ok: false, kind: "corrupt", message: why });
  if (pdu.length < 2) return corrupt("short frame");
  if (pdu[0] === (r.fc | 0x80)) {
    if (pdu.length !== 2) return corrupt("exception frame length");
    return { ok: false, kind: "exception", code: pdu[1], message: `exception ${pdu[1]}` };
  }
  if (pdu[0] !== r.fc) return corrupt(`function code ${pdu[0]} answers ${r.fc}`);
  if (pdu.length !== responseLength(r)) return corrupt(`length ${pdu.length}, expected ${responseLength(r)}`);
  const u16 = (off: number): number => (pdu[off] << 8) | pdu[off + 1];
  switch (r.fc) {
    case FC.READ_COILS:
    case FC.READ_DISCRETE_INPUTS: {
      if (pdu[1] !== pdu.length - 2) return corrupt("byte count");
      const bits: number[] = [];
      for (let i = 0; i < r.count; i++) bits.push((pdu[2 + (i >> 3)] >> (i & 7)) & 1);
      return { ok: true, data: bits };
    }
    case FC.READ_HOLDING_REGISTERS:
    case FC.READ_INPUT_REGISTERS: {
      if (pdu[1] !== r.count * 2) return corrupt("byte count");
      const regs: number[] = [];
      for (let i = 0; i < r.count; i++) regs.push(u16(2 + i * 2));
      return { ok: true, data: regs };
    }
    default: {
      // writes echo the address and the value or quantity
      const req = encodeRequest(r);
      for (let i = 1; i < 5; i++) if (pdu[i] !== req[i]) return corrupt("write echo differs from the request");
      return { ok: true, data: [] };
    }
  }
}
