// Splits a Modbus config in two by point and output id: what a second driver (on another thread,
// with connections of its own) serves, and what stays with the first. Only Modbus TCP devices can
// be split: a device on a serial bus shares the port with every other device on it, and one
// port has one owner, so its points stay where they were and are reported as left behind.
import type { DeviceConfig, ModbusConfig } from "./config.js";
import type { LeaseConfig } from "./lease.js";

export interface ModbusSplit {
  /** the config without the points and outputs taken */
  kept: ModbusConfig;
  /** a config of the taken points and outputs only: same devices and groups, no buses, no leases */
  taken: ModbusConfig;
  /** ids asked for that stay in `kept`: on a serial bus */
  left: string[];
  /**
   * the lease register of each taken device that has one: the taken driver does not beat it,
   * but may write it once (ModbusDriver.renewLease) to have a device whose lease ran out take a
   * write toward its safe state
   */
  leases: Record<string, LeaseConfig>;
}

/**
 * Takes the points and outputs named (`<device>.<name>`) off their TCP devices into a config of
 * their own. The taken devices keep their address, timeouts, retries and breaker, but carry no
 * lease heartbeat: the lease stays with the kept driver, which writes it only while the agent
 * is healthy. A kept device left with nothing to poll or write still connects, for its lease.
 */
export function splitModbus(config: ModbusConfig, take: ReadonlySet<string>): ModbusSplit {
  const kept: DeviceConfig[] = [];
  const taken: DeviceConfig[] = [];
  const left: string[] = [];
  const leases: Record<string, LeaseConfig> = {};
  for (const d of config.devices) {
    const mine = (name: string): boolean => take.has(`${d.name}.${name}`);
    const points = d.points.filter((p) => mine(p.name));
    const outputs = d.outputs.filter((o) => mine(o.name));
    if (points.length + outputs.length === 0) {
      kept.push(d);
      continue;
    }
    if (d.tcp === undefined) {
      left.push(...[...points, ...outputs].map((x) => `${d.name}.${x.name}`));
      kept.push(d);
      continue;
    }
    kept.push({ ...d, points: d.points.filter((p) => !mine(p.name)), outputs: d.outputs.filter((o) => !mine(o.name)) });
    const { lease, ...rest } = d;
    taken.push({ ...rest, points, outputs });
    if (lease !== undefined) leases[d.name] = lease;
  }
  return { kept: { ...config, devices: kept }, taken: { ...config, buses: [], devices: taken }, left, leases };
}
