// Read planning: the points of one device and polling group, coalesced into as few requests as
// the device allows (contiguous or within maxGap, at most maxLength per request).
import { registerCount } from "./codec.js";
import type { DeviceConfig, PointConfig, ReadTable } from "./config.js";
import { FC } from "./protocol.js";
import type { ModbusRequest } from "./types.js";

export interface ReadBlock {
  table: ReadTable;
  request: Extract<ModbusRequest, { count: number }>;
  /** each point with its offset (in registers or bits) inside the response */
  points: { point: PointConfig; offset: number }[];
}

const FC_OF: Record<ReadTable, 1 | 2 | 3 | 4> = {
  coil: FC.READ_COILS,
  discrete: FC.READ_DISCRETE_INPUTS,
  holding: FC.READ_HOLDING_REGISTERS,
  input: FC.READ_INPUT_REGISTERS,
};

const width = (p: PointConfig): number => (p.table === "coil" || p.table === "discrete" ? 1 : registerCount(p.type));

export function planReads(device: DeviceConfig, points: readonly PointConfig[]): ReadBlock[] {
  const blocks: ReadBlock[] = [];
  for (const table of ["coil", "discrete", "holding", "input"] as const) {
    const bits = table === "coil" || table === "discrete";
    const maxLen = bits ? device.maxRequestBits : device.maxRequestRegisters;
    const maxGap = device.maxGapRegisters * (bits ? 16 : 1);
    const sorted = points.filter((p) => p.table === table).sort((a, b) => a.address - b.address);
    let cur: { start: number; end: number; points: PointConfig[] } | null = null;
    const flush = (): void => {
      if (cur === null) return;
      const c = cur;
      blocks.push({
        table,
        request: { fc: FC_OF[table], address: c.start, count: c.end - c.start },
        points: c.points.map((point) => ({ point, offset: point.address - c.start })),
      });
      cur = null;
    };
    for (const p of sorted) {
      const end = p.address + width(p);
      if (cur !== null && p.address - cur.end <= maxGap && Math.max(cur.end, end) - cur.start <= maxLen) {
        cur.end = Math.max(cur.end, end);
        cur.points.push(p);
      } else {
        flush();
        cur = { start: p.address, end, points: [p] };
      }
    }
    flush();
  }
  return blocks;
}
