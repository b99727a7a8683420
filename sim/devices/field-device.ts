// A simulated Modbus field device: a register map over a model, a comms-loss watchdog, and
// the faults a test can inject (offline, slow, exception codes, per-value sensor faults).
import { decodeValue, encodeValue, registerCount, type DataType } from "../../drivers/modbus/codec.js";
import { EXCEPTION } from "../../drivers/modbus/protocol.js";
import type { Prng } from "../prng.js";
import { isBitTable, type RegisterEntry, type Table } from "./register-map.js";
import { handlePdu, exceptionPdu, type SlaveDataModel } from "./slave-pdu.js";

/**
 * How a device keeps its comms-loss lease (docs/safety.md, Device leases): `register`, any write
 * to its heartbeat register renews it (a module's watchdog-reset register); `counter`, only a
 * write of a new value does (custom firmware's heartbeat counter: a stuck writer repeating itself
 * does not keep it); `comms`, any request at all does (a module's communication watchdog).
 */
export type LeaseStyle = "register" | "counter" | "comms";

/** Comms-loss watchdog: expires when nothing renewed it within the lease. */
export class Watchdog {
  lastBeatMs = -Infinity;
  private lastValue: number | null = null;

  constructor(
    /** lease, ms; 0 disables the watchdog */
    public leaseMs: number,
    readonly style: LeaseStyle = "register",
  ) {}

  /** A write to the heartbeat register. */
  beat(nowMs: number, value?: number): void {
    if (this.style === "counter" && value !== undefined && value === this.lastValue) return;
    if (value !== undefined) this.lastValue = value;
    this.lastBeatMs = nowMs;
  }

  /** Any request the device answered. */
  traffic(nowMs: number): void {
    if (this.style === "comms") this.lastBeatMs = nowMs;
  }

  expired(nowMs: number): boolean {
    return this.leaseMs > 0 && nowMs - this.lastBeatMs > this.leaseMs;
  }
}

export type SensorFault =
  | { kind: "stuck" }
  | { kind: "drift"; ratePerS: number }
  | { kind: "noise"; sigma: number }
  | { kind: "nan" }
  | { kind: "value"; value: number };

interface ActiveSensorFault {
  fault: SensorFault;
  sinceMs: number;
  frozen?: number;
}

export interface DeviceFaults {
  /** no answer at all */
  offline: boolean;
  /** answer this much later */
  slowMs: number;
  /** reset the TCP connection (RST) after every this-many answers on it; 0: never */
  resetEvery: number;
  /** damage this share of its answers on the RTU line, % (line-noise.ts); 0: none */
  lineNoisePct: number;
  /** answer every request (or those with the listed function codes) with this exception code */
  exception?: { code: number; functions?: number[] };
}

interface Slot<Ctx> {
  entry: RegisterEntry<Ctx>;
  /** which register (or bit) of the entry this address is */
  word: number;
}

const INT_RANGE: Partial<Record<DataType, [number, number]>> = {
  u16: [0, 0xffff],
  i16: [-0x8000, 0x7fff],
  u32: [0, 0xffffffff],
  i32: [-0x80000000, 0x7fffffff],
  u64: [0, Number.MAX_SAFE_INTEGER],
  i64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

/** Raw value a device reports for "not a number" in an integer register. */
function invalidRaw(type: DataType): number {
  if (type === "i16") return -0x8000;
  if (type === "u16") return 0xffff;
  if (type === "i32") return -0x80000000;
  if (type === "u32") return 0xffffffff;
  return 0;
}

export class FieldDevice<Ctx> implements SlaveDataModel {
  readonly faults: DeviceFaults = { offline: false, slowMs: 0, resetEvery: 0, lineNoisePct: 0 };
  private readonly sensorFaults = new Map<string, ActiveSensorFault>();
  private readonly index = new Map<Table, Map<number, Slot<Ctx>>>();
  private readonly byName = new Map<string, RegisterEntry<Ctx>>();
  /** monotonic ms of the last accepted write request (ground truth for tests) */
  lastWriteAtMs = -Infinity;
  requests = 0;

  constructor(
    readonly name: string,
    readonly unitId: number,
    readonly entries: readonly RegisterEntry<Ctx>[],
    readonly ctx: Ctx,
    private readonly clock: () => number,
    private readonly rng: Prng,
  ) {
    for (const t of ["coil", "discrete", "holding", "input"] as const) this.index.set(t, new Map());
    for (const e of entries) {
      const table = this.index.get(e.table)!;
      const width = isBitTable(e.table) ? 1 : registerCount(e.type);
      for (let w = 0; w < width; w++) {
        if (table.has(e.address + w)) throw new Error(`${name}: ${e.table} ${e.address + w} mapped twice`);
        table.set(e.address + w, { entry: e, word: w });
      }
      this.byName.set(e.name, e);
    }
  }

  entry(name: string): RegisterEntry<Ctx> | undefined {
    return this.byName.get(name);
  }

  setSensorFault(name: string, fault: SensorFault | null): void {
    const e = this.byName.get(name);
    if (e === undefined || e.write !== undefined) throw new Error(`${this.name} has no sensor value "${name}"`);
    if (fault === null) this.sensorFaults.delete(name);
    else this.sensorFaults.set(name, { fault, sinceMs: this.clock(), frozen: fault.kind === "stuck" ? e.read(this.ctx) : undefined });
  }

  clearFaults(): void {
    this.faults.offline = false;
    this.faults.slowMs = 0;
    this.faults.resetEvery = 0;
    this.faults.lineNoisePct = 0;
    this.faults.exception = undefined;
    this.sensorFaults.clear();
  }

  /** The engineering value the device reports now, sensor faults applied. */
  reported(e: RegisterEntry<Ctx>): number {
    const source = e.follows === undefined ? undefined : this.byName.get(e.follows.entry);
    const truth = e.follows !== undefined && source !== undefined ? e.follows.transmit(this.reported(source)) : e.read(this.ctx);
    const f = this.sensorFaults.get(e.name);
    if (f === undefined) return truth;
    switch (f.fault.kind) {
      case "stuck":
        return f.frozen ?? truth;
      case "drift":
        return truth + (f.fault.ratePerS * (this.clock() - f.sinceMs)) / 1000;
      case "noise":
        return truth + f.fault.sigma * this.rng.gaussian();
      case "nan":
        return NaN;
      case "value":
        return f.fault.value;
    }
  }

  private encoded(e: RegisterEntry<Ctx>): number[] {
    const v = this.reported(e);
    if (isBitTable(e.table)) return [v ? 1 : 0];
    if (!Number.isFinite(v) && e.type !== "f32" && e.type !== "f64") return encodeValue(invalidRaw(e.type), e.type, e.order);
    let raw = e.scale !== undefined ? v / e.scale : v;
    // a value beyond an integer register's range saturates, as real devices do
    const range = INT_RANGE[e.type];
    if (range !== undefined) raw = Math.min(Math.max(Math.round(raw), range[0]), range[1]);
    return encodeValue(raw, e.type, e.order);
  }

  readBits(table: "coil" | "discrete", address: number, count: number): number[] | number {
    const t = this.index.get(table)!;
    const out: number[] = [];
    for (let a = address; a < address + count; a++) {
      const s = t.get(a);
      if (s === undefined) return EXCEPTION.ILLEGAL_DATA_ADDRESS;
      out.push(this.reported(s.entry) ? 1 : 0);
    }
    return out;
  }

  readRegisters(table: "holding" | "input", address: number, count: number): number[] | number {
    const t = this.index.get(table)!;
    const out: number[] = [];
    const cache = new Map<RegisterEntry<Ctx>, number[]>();
    for (let a = address; a < address + count; a++) {
      const s = t.get(a);
      if (s === undefined) return EXCEPTION.ILLEGAL_DATA_ADDRESS;
      let words = cache.get(s.entry);
      if (words === undefined) {
        words = this.encoded(s.entry);
        cache.set(s.entry, words);
      }
      out.push(words[s.word]);
    }
    return out;
  }

  writeBits(address: number, values: number[]): number | undefined {
    const t = this.index.get("coil")!;
    const slots = values.map((_, k) => t.get(address + k));
    if (slots.some((s) => s === undefined || s.entry.write === undefined)) return EXCEPTION.ILLEGAL_DATA_ADDRESS;
    slots.forEach((s, k) => s!.entry.write!(this.ctx, values[k]));
    this.lastWriteAtMs = this.clock();
    return undefined;
  }

  writeRegisters(address: number, values: number[]): number | undefined {
    const t = this.index.get("holding")!;
    // a write must cover whole entries: half a float is refused, as real devices do
    const writes: [RegisterEntry<Ctx>, number[]][] = [];
    let k = 0;
    while (k < values.length) {
      const s = t.get(address + k);
      if (s === undefined || s.entry.write === undefined) return EXCEPTION.ILLEGAL_DATA_ADDRESS;
      const n = registerCount(s.entry.type);
      if (s.word !== 0 || k + n > values.length) return EXCEPTION.ILLEGAL_DATA_ADDRESS;
      writes.push([s.entry, values.slice(k, k + n)]);
      k += n;
    }
    for (const [e, words] of writes) {
      const raw = decodeValue(words, 0, e.type, e.order);
      const v = e.scale !== undefined ? raw * e.scale : raw;
      if (!Number.isFinite(v)) return EXCEPTION.ILLEGAL_DATA_VALUE;
    }
    for (const [e, words] of writes) {
      const raw = decodeValue(words, 0, e.type, e.order);
      e.write!(this.ctx, e.scale !== undefined ? raw * e.scale : raw);
    }
    this.lastWriteAtMs = this.clock();
    return undefined;
  }

  /**
   * Answers one request PDU as this device would, or null for no answer.
   * Slowness is the transport's job (see `faults.slowMs`).
   */
  /** called on every request the device takes (not while offline): a comms watchdog's renewal */
  onRequest: (() => void) | null = null;

  respond(pdu: Buffer): Buffer | null {
    this.requests++;
    if (this.faults.offline) return null;
    this.onRequest?.();
    const ex = this.faults.exception;
    if (ex !== undefined && pdu.length > 0 && (ex.functions === undefined || ex.functions.includes(pdu[0]))) {
      return exceptionPdu(pdu[0], ex.code);
    }
    return handlePdu(this, pdu);
  }
}
