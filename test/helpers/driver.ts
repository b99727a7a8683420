// Driver configs for tests: the simulator's devices described as the driver would see them.
import { validateModbusConfig, type ModbusConfig, type PointConfig } from "../../drivers/modbus/config.js";
import { cduEntries, rackEntries } from "../../sim/devices/pod-devices.js";
import type { RegisterEntry } from "../../sim/devices/register-map.js";

/** Every readable register of a simulated device as a driver point (polled in `group`). */
export function pointsFromEntries<C>(entries: RegisterEntry<C>[], group = "control"): Partial<PointConfig>[] {
  return entries.map((e) => ({
    name: e.name,
    table: e.table,
    address: e.address,
    type: e.table === "coil" || e.table === "discrete" ? "bool" : e.type,
    order: e.order ?? "ABCD",
    scale: e.scale ?? 1,
    unit: e.unit,
    group,
    ...(e.type === "i16" && e.scale !== undefined ? { invalidRaw: -32768 } : {}),
  }));
}

export const rackPoints = (group?: string): Partial<PointConfig>[] => pointsFromEntries(rackEntries(() => 0), group);
export const cduPoints = (group?: string): Partial<PointConfig>[] => pointsFromEntries(cduEntries(() => 0), group);

/** Validates (and defaults) a driver config written as plain data. */
export function modbusConfig(data: unknown): ModbusConfig {
  return validateModbusConfig(structuredClone(data), "test modbus config");
}
