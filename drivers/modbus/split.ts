// Splits a Modbus config in two by point and output id: what a second driver (on another thread,
// with connections of its own) serves, and what stays with the first. A Modbus TCP device is
// split point by point, each driver on a connection of its own. A serial bus is one port, and one
// port has one owner: a bus with any id asked for on it goes whole, every device on it with all
// its points, outputs and its lease, for the second driver to serve with its safety frames first
// (their group's priority, drivers/modbus/bus.ts). But a bus whose direction podwarden toggles by
// RTS: that takes serialport's binding, on the main thread only (serial-link.ts), so its ids
// stay where they were and are reported as left behind.
import type { DeviceConfig, ModbusConfig } from "./config.js";
import type { LeaseConfig } from "./lease.js";

export interface ModbusSplit {
  /** the config without the points and outputs taken */
  kept: ModbusConfig;
  /**
   * a config of the taken TCP points and outputs and the taken buses: the TCP devices without
   * their leases, the serial buses' devices whole, with theirs
   */
  taken: ModbusConfig;
  /** ids asked for that stay in `kept`: on a serial bus with RTS direction control */
  left: string[];
  /** the serial buses taken whole */
  buses: string[];
  /**
   * the lease register of each taken device that has one: the taken driver does not beat a TCP
   * device's (it beats a taken bus's devices' itself), but may write it once
   * (ModbusDriver.renewLease) to have a device whose lease ran out take a write toward its safe state
   */
  leases: Record<string, LeaseConfig>;
}

/**
 * Takes the points and outputs named (`<device>.<name>`) off their TCP devices into a config of
 * their own, and the serial buses they are on whole. The taken TCP devices keep their address,
 * timeouts, retries and breaker, but carry no lease heartbeat: the lease stays with the kept
 * driver, which writes it only while the agent is healthy. A kept device left with nothing to
 * poll or write still connects, for its lease.
 */
export function splitModbus(config: ModbusConfig, take: ReadonlySet<string>): ModbusSplit {
  const kept: DeviceConfig[] = [];
  const taken: DeviceConfig[] = [];
  const left: string[] = [];
  const leases: Record<string, LeaseConfig> = {};
  const asked = (d: DeviceConfig): string[] => [...d.points, ...d.outputs].map((x) => `${d.name}.${x.name}`).filter((id) => take.has(id));
  const rts = new Set(config.buses.filter((b) => b.rs485 === "rts").map((b) => b.name));
  const wholeBuses = new Set(config.devices.filter((d) => d.bus !== undefined && !rts.has(d.bus) && asked(d).length > 0).map((d) => d.bus as string));
  for (const d of config.devices) {
    const mine = (name: string): boolean => take.has(`${d.name}.${name}`);
    if (d.bus !== undefined && wholeBuses.has(d.bus)) {
      taken.push(d);
      if (d.lease !== undefined) leases[d.name] = d.lease;
      continue;
    }
    const points = d.points.filter((p) => mine(p.name));
    const outputs = d.outputs.filter((o) => mine(o.name));
    if (points.length + outputs.length === 0) {
      kept.push(d);
      continue;
    }
    if (d.tcp === undefined) {
      left.push(...asked(d));
      kept.push(d);
      continue;
    }
    kept.push({ ...d, points: d.points.filter((p) => !mine(p.name)), outputs: d.outputs.filter((o) => !mine(o.name)) });
    const { lease, ...rest } = d;
    taken.push({ ...rest, points, outputs });
    if (lease !== undefined) leases[d.name] = lease;
  }
  return {
    kept: { ...config, buses: config.buses.filter((b) => !wholeBuses.has(b.name)), devices: kept },
    taken: { ...config, buses: config.buses.filter((b) => wholeBuses.has(b.name)), devices: taken },
    left,
    buses: [...wholeBuses],
    leases,
  };
}
