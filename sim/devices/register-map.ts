// Register-map description of a simulated field device: which table and address each named
// value lives at, how it is encoded, and how it reads from / writes to the device model.
import type { DataType, WordOrder } from "../../drivers/modbus/codec.js";

export type Table = "coil" | "discrete" | "holding" | "input";

export interface RegisterEntry<Ctx> {
  name: string;
  table: Table;
  address: number;
  type: DataType;
  order?: WordOrder;
  /** engineering value = raw * scale (integer types only) */
  scale?: number;
  unit?: string;
  description: string;
  read(ctx: Ctx): number;
  /** present for writable entries (holding registers, coils) */
  write?(ctx: Ctx, value: number): void;
  /**
   * A transmitter of another of the device's values: it reports `transmit(that value as
   * reported)`, so the sensor faults injected there reach it, as a real transmitter passes its
   * sensor's failure on. (`read` gives the same from the truth.)
   */
  follows?: { entry: string; transmit(value: number): number };
}

export const isBitTable = (t: Table): boolean => t === "coil" || t === "discrete";
