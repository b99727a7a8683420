// Markdown tables of the simulated devices' register maps, for docs/simulator.md.
import { registerCount } from "../../drivers/modbus/codec.js";
import { cduEntries, rackEntries } from "./pod-devices.js";
import type { RegisterEntry } from "./register-map.js";

const TABLE_ORDER = ["coil", "discrete", "holding", "input"] as const;

function table<Ctx>(entries: RegisterEntry<Ctx>[]): string {
  const out = ["| table | address | name | type | order | scale | unit | access | description |", "|---|---:|---|---|---|---:|---|---|---|"];
  const sorted = [...entries].sort((a, b) => TABLE_ORDER.indexOf(a.table) - TABLE_ORDER.indexOf(b.table) || a.address - b.address);
  for (const e of sorted) {
    const n = e.table === "coil" || e.table === "discrete" ? 1 : registerCount(e.type);
    const addr = n > 1 ? `${e.address}–${e.address + n - 1}` : String(e.address);
    const order = n > 1 ? e.order ?? "ABCD" : "";
    out.push(`| ${e.table} | ${addr} | \`${e.name}\` | ${e.type} | ${order} | ${e.scale ?? ""} | ${e.unit ?? ""} | ${e.write !== undefined ? "read/write" : "read"} | ${e.description} |`);
  }
  return out.join("\n");
}

export function registerMapDocs(): { cdu: string; rack: string } {
  const now = (): number => 0;
  return { cdu: table(cduEntries(now)), rack: table(rackEntries(now)) };
}
