// The pod's live I/O list for commissioning (`podwarden io`, docs/commissioning.md): every field
// point the pod reads, with its value, quality and age, beside its device's health, as the
// drivers see them now. Pure: the admin socket hands it the points and the drivers' counters.
import type { ModbusDriver } from "../../drivers/modbus/driver.js";
import type { RedfishDeviceStats } from "../../drivers/redfish/bmc-runtime.js";
import type { Point } from "../../lib/points.js";
import { modbusHealth, redfishHealth } from "../loop/field-driver.js";
import { textTable } from "../../lib/text-table.js";

export interface IoRow {
  /** `<device>.<point>` */
  id: string;
  device: string;
  /** null: never read (NaN, an invalid reading, goes out as null too: JSON has no NaN) */
  value: number | null;
  unit: string;
  quality: string;
  /** ms since the value was read at the device (its source time); null: never read */
  ageMs: number | null;
  /** the device's health: null when the pod knows no such device (an MQTT ingest point) */
  deviceOk: boolean | null;
  deviceWhy: string;
}

export function ioList(points: readonly Point[], modbus: ReturnType<ModbusDriver["stats"]>, redfish: readonly RedfishDeviceStats[], nowMs: number): IoRow[] {
  // each device's health as the pod loop reports it to the supervisor (agent/loop/field-driver.ts)
  const health = new Map([...modbusHealth(modbus), ...redfishHealth(redfish)].map((h) => [h.name, h]));
  return points
    .map((p) => {
      const device = p.id.slice(0, Math.max(0, p.id.indexOf(".")));
      const h = health.get(device);
      const read = Number.isFinite(p.sourceTimeMs);
      return {
        id: p.id,
        device,
        value: Number.isFinite(p.value) ? p.value : null,
        unit: p.unit ?? "",
        quality: p.quality,
        ageMs: read ? Math.max(0, Math.round(nowMs - p.sourceTimeMs)) : null,
        deviceOk: h === undefined ? null : h.ok,
        deviceWhy: h === undefined || h.ok ? "" : h.why,
      };
    })
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The list as a table a person reads at a terminal. */
export function ioTable(rows: readonly IoRow[]): string {
  const cells = rows.map((r) => [r.id, r.value === null ? "—" : `${Number(r.value.toPrecision(6))}${r.unit === "" ? "" : ` ${r.unit}`}`, r.quality, r.ageMs === null ? "never" : r.ageMs < 10_000 ? `${r.ageMs} ms` : `${Math.round(r.ageMs / 1000)} s`, r.deviceOk === null ? "" : r.deviceOk ? "ok" : `NOT OK: ${r.deviceWhy}`]);
  return textTable(["point", "value", "quality", "age", "device"], cells);
}
