// Modbus register data types and byte orders.
//
// A multi-register value is described by the big-endian byte sequence of the value (A B C D
// for 32 bits) and how a device lays those bytes into consecutive 16-bit registers:
//   ABCD  big-endian words, big-endian bytes      reg0 = AB, reg1 = CD
//   CDAB  word-swapped                             reg0 = CD, reg1 = AB
//   BADC  byte-swapped within each word            reg0 = BA, reg1 = DC
//   DCBA  fully little-endian                      reg0 = DC, reg1 = BA
// 64-bit types generalise the same four orders over four registers; 16-bit types use only
// the byte swap (BADC and DCBA swap the two bytes, ABCD and CDAB do not).

export const DATA_TYPES = ["bool", "bit", "u16", "i16", "u32", "i32", "f32", "f64", "u64", "i64"] as const;
export type DataType = (typeof DATA_TYPES)[number];
export const WORD_ORDERS = ["ABCD", "CDAB", "BADC", "DCBA"] as const;
export type WordOrder = (typeof WORD_ORDERS)[number];

/** 16-bit registers a value of this type occupies (bool and bit: one register, or one coil). */
export function registerCount(type: DataType): number {
  switch (type) {
    case "bool":
    case "bit":
    case "u16":
    case "i16":
      return 1;
    case "u32":
    case "i32":
    case "f32":
      return 2;
    case "f64":
    case "u64":
    case "i64":
      return 4;
  }
}

const wordsSwapped = (order: WordOrder): boolean => order === "CDAB" || order === "DCBA";
const bytesSwapped = (order: WordOrder): boolean => order === "BADC" || order === "DCBA";

/** Registers (in wire order) -> big-endian bytes of the value. */
function toBigEndian(regs: ArrayLike<number>, offset: number, n: number, order: WordOrder): DataView {
  const view = new DataView(new ArrayBuffer(n * 2));
  for (let k = 0; k < n; k++) {
    const reg = regs[offset + (wordsSwapped(order) ? n - 1 - k : k)] & 0xffff;
    const word = bytesSwapped(order) ? ((reg & 0xff) << 8) | (reg >> 8) : reg;
    view.setUint16(k * 2, word);
  }
  return view;
}

/** Big-endian bytes of the value -> registers in wire order. */
function fromBigEndian(view: DataView, n: number, order: WordOrder): number[] {
  const out = new Array<number>(n);
  for (let k = 0; k < n; k++) {
    const word = view.getUint16(k * 2);
    const reg = bytesSwapped(order) ? ((word & 0xff) << 8) | (word >> 8) : word;
    out[wordsSwapped(order) ? n - 1 - k : k] = reg;
  }
  return out;
}

/**
 * Decodes one value starting at regs[offset]. `bit` selects the bit (0 = LSB) for type "bit".
 * 64-bit integers beyond 2^53 lose precision (they become the nearest double).
 */
export function decodeValue(regs: ArrayLike<number>, offset: number, type: DataType, order: WordOrder = "ABCD", bit = 0): number {
  const n = registerCount(type);
  if (offset < 0 || offset + n > regs.length) throw new RangeError(`${type} at ${offset} needs ${n} registers, have ${regs.length}`);
  if (type === "bool") return regs[offset] !== 0 ? 1 : 0;
  const v = toBigEndian(regs, offset, n, order);
  switch (type) {
    case "bit":
      return (v.getUint16(0) >> bit) & 1;
    case "u16":
      return v.getUint16(0);
    case "i16":
      return v.getInt16(0);
    case "u32":
      return v.getUint32(0);
    case "i32":
      return v.getInt32(0);
    case "f32":
      return v.getFloat32(0);
    case "f64":
      return v.getFloat64(0);
    case "u64":
      return Number(v.getBigUint64(0));
    case "i64":
      return Number(v.getBigInt64(0));
  }
}

/** Encodes one value into registers, in wire order. Integers are rounded and must fit their type. */
export function encodeValue(value: number, type: DataType, order: WordOrder = "ABCD"): number[] {
  const n = registerCount(type);
  const v = new DataView(new ArrayBuffer(n * 2));
  const int = (lo: number, hi: number): number => {
    const r = Math.round(value);
    if (!Number.isFinite(r) || r < lo || r > hi) throw new RangeError(`${value} does not fit ${type}`);
    return r;
  };
  switch (type) {
    case "bool":
    case "bit":
      return [value !== 0 ? 1 : 0];
    case "u16":
      v.setUint16(0, int(0, 0xffff));
      break;
    case "i16":
      v.setInt16(0, int(-0x8000, 0x7fff));
      break;
    case "u32":
      v.setUint32(0, int(0, 0xffffffff));
      break;
    case "i32":
      v.setInt32(0, int(-0x80000000, 0x7fffffff));
      break;
    case "f32":
      v.setFloat32(0, value);
      break;
    case "f64":
      v.setFloat64(0, value);
      break;
    case "u64":
      v.setBigUint64(0, BigInt(int(0, Number.MAX_SAFE_INTEGER)));
      break;
    case "i64":
      v.setBigInt64(0, BigInt(int(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)));
      break;
  }
  return fromBigEndian(v, n, order);
}
