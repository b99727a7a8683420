// Modbus application protocol constants and the RTU CRC, shared by the drivers (master side)
// and the simulator's devices (slave side).

export const FC = {
  READ_COILS: 1,
  READ_DISCRETE_INPUTS: 2,
  READ_HOLDING_REGISTERS: 3,
  READ_INPUT_REGISTERS: 4,
  WRITE_SINGLE_COIL: 5,
  WRITE_SINGLE_REGISTER: 6,
  WRITE_MULTIPLE_COILS: 15,
  WRITE_MULTIPLE_REGISTERS: 16,
} as const;

/** Exception codes (Modbus Application Protocol v1.1b3, section 7). */
export const EXCEPTION = {
  ILLEGAL_FUNCTION: 1,
  ILLEGAL_DATA_ADDRESS: 2,
  ILLEGAL_DATA_VALUE: 3,
  SERVER_DEVICE_FAILURE: 4,
  ACKNOWLEDGE: 5,
  SERVER_DEVICE_BUSY: 6,
  NEGATIVE_ACKNOWLEDGE: 7,
  MEMORY_PARITY_ERROR: 8,
  GATEWAY_PATH_UNAVAILABLE: 10,
  GATEWAY_TARGET_FAILED: 11,
} as const;

/** Protocol limits per request. */
export const MAX_READ_BITS = 2000;
export const MAX_READ_REGISTERS = 125;
export const MAX_WRITE_BITS = 1968;
export const MAX_WRITE_REGISTERS = 123;

const CRC_TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1;
    t[i] = c;
  }
  return t;
})();

/** CRC-16/MODBUS of bytes [start, end). Appended to an RTU frame low byte first. */
export function crc16(buf: Uint8Array, start = 0, end = buf.length): number {
  let crc = 0xffff;
  for (let i = start; i < end; i++) crc = (crc >>> 8) ^ CRC_TABLE[(crc ^ buf[i]) & 0xff];
  return crc;
}

/** Appends the CRC to an RTU frame body (unit id + PDU). */
export function withCrc(body: Uint8Array): Buffer {
  const out = Buffer.alloc(body.length + 2);
  out.set(body, 0);
  const crc = crc16(body);
  out[body.length] = crc & 0xff;
  out[body.length + 1] = crc >>> 8;
  return out;
}

/** True if the last two bytes of the frame are the CRC of the rest. */
export function crcOk(frame: Uint8Array): boolean {
  if (frame.length < 4) return false;
  const crc = crc16(frame, 0, frame.length - 2);
  return frame[frame.length - 2] === (crc & 0xff) && frame[frame.length - 1] === crc >>> 8;
}

/**
 * Length of a complete RTU *request* frame (unit + PDU + CRC) starting at buf[0], or 0 if more
 * bytes are needed, or -1 if the function code is not one whose length can be known.
 */
export function rtuRequestLength(buf: Uint8Array): number {
  if (buf.length < 2) return 0;
  const fc = buf[1];
  switch (fc) {
    case FC.READ_COILS:
    case FC.READ_DISCRETE_INPUTS:
    case FC.READ_HOLDING_REGISTERS:
    case FC.READ_INPUT_REGISTERS:
    case FC.WRITE_SINGLE_COIL:
    case FC.WRITE_SINGLE_REGISTER:
      return 8;
    case FC.WRITE_MULTIPLE_COILS:
    case FC.WRITE_MULTIPLE_REGISTERS:
      if (buf.length < 7) return 0;
      return 9 + buf[6];
    default:
      return -1;
  }
}
