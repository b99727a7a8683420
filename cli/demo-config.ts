// The demo pod's agent config (configs/demo-pod.yaml) as plain data, optionally pointed at a
// simulator on other ports: the demo, the tests and the benchmarks all start from it.
import { configDataWithProfiles } from "../agent/config/device-profiles.js";
import { validateAgentConfig, type AgentConfig } from "../agent/config/load.js";
import { RETURN_TX_RANGE_C } from "../sim/devices/pod-devices.js";

export const DEMO_AGENT_CONFIG = "configs/demo-pod.yaml";

export interface DemoConfigData extends Record<string, unknown> {
  modbus: { groups: { name: string; periodMs: number }[]; devices: { name: string; tcp: { port: number } }[] };
}

/**
 * Parses the demo config, its device profiles expanded (so the data lists every point, as a
 * hand-written config does, for the rewiring below to edit); `portOf` moves each Modbus device
 * to the simulator's actual port.
 */
export function demoConfigData(portOf?: (device: string) => number | undefined, path = DEMO_AGENT_CONFIG): DemoConfigData {
  const data = configDataWithProfiles(path) as DemoConfigData;
  if (portOf !== undefined) {
    for (const d of data.modbus.devices) {
      const port = portOf(d.name);
      if (port === undefined) throw new Error(`the simulator has no device "${d.name}"`);
      d.tcp.port = port;
    }
  }
  return data;
}

/**
 * The demo pod's config, validated with the schema's defaults filled in: the daemon's own
 * tuning, for the virtual pod, the benches and the tests. `patch` edits the data first.
 */
export function demoAgentConfig(patch?: (data: DemoConfigData) => void): AgentConfig {
  const data = demoConfigData();
  patch?.(data);
  return validateAgentConfig(data, DEMO_AGENT_CONFIG);
}

/**
 * Rewires racks (all, or those `racks` picks) to read their return temperature, the PV of their
 * loop, as a 4–20 mA loop current through the simulator's transmitter (`returnTempMa`, input
 * register 11 in µA), as many sites wire it: a sensor fault then reaches the agent the way a real
 * transmitter passes it on, and loop-current faults can be injected on the wire itself. The demo
 * config names each rack's Modbus device after the rack.
 */
export function readReturnTempsThroughTransmitters(d: Record<string, unknown>, racks: (name: string) => boolean = () => true): void {
  const [at4mA, at20mA] = RETURN_TX_RANGE_C;
  for (const dev of (d.modbus as { devices: { name: string; points: object[] }[] }).devices) {
    if (!dev.name.startsWith("rack-") || !racks(dev.name)) continue;
    // a new array: YAML anchors may share one points list between the racks
    dev.points = [...dev.points, { name: "returnTempTx", table: "input", address: 11, type: "u16", scale: 0.001, unit: "°C", group: "control", loop4to20: { at4mA, at20mA } }];
  }
  for (const rack of d.racks as { name: string; points: Record<string, unknown> }[]) {
    if (racks(rack.name)) rack.points = { ...rack.points, returnTempC: `${rack.name}.returnTempTx` };
  }
}

/** The environment variable the demo's BMC password comes from (the simulator's BMCs take "podwarden-sim"). */
export const DEMO_BMC_PASSWORD_ENV = "PODWARDEN_BMC_PASSWORD";

/**
 * Rewires racks (all, or those `racks` picks) to take their power reading, leak detector and
 * power cap from their BMC over Redfish (the simulator's `devices.redfish`, on `portOf("<rack>.bmc")`),
 * as a pod of racks with their own management controllers is wired: temperatures, flow and the
 * valves stay on Modbus. The BMCs speak plain HTTP on loopback; `tls` pins a CA instead.
 */
export function readRacksThroughBmcs(
  d: Record<string, unknown>,
  portOf: (device: string) => number | undefined,
  o: { racks?: (name: string) => boolean; tls?: { caFile: string }; pollMs?: number } = {},
): void {
  const pick = o.racks ?? (() => true);
  const devices: object[] = [];
  for (const rack of d.racks as { name: string; points: Record<string, unknown>; outputs: Record<string, unknown> }[]) {
    if (!pick(rack.name)) continue;
    const port = portOf(`${rack.name}.bmc`);
    if (port === undefined) throw new Error(`the simulator serves no BMC for ${rack.name} (devices.redfish)`);
    const bmc = `${rack.name}-bmc`;
    const ch = `/redfish/v1/Chassis/${rack.name}`;
    devices.push({
      name: bmc,
      url: `${o.tls === undefined ? "http" : "https"}://127.0.0.1:${port}`,
      ...(o.tls === undefined ? { allowPlaintext: true } : { tls: { caFile: o.tls.caFile } }),
      auth: { mode: "session", user: "admin", passwordEnv: DEMO_BMC_PASSWORD_ENV },
      ...(o.pollMs === undefined ? {} : { pollMs: o.pollMs }),
      points: [
        { name: "powerKw", path: `${ch}/Sensors/RackPower`, scale: 0.001, unit: "kW" },
        { name: "leak", path: `${ch}/ThermalSubsystem/LeakDetection/LeakDetectors/${rack.name}-leak`, kind: "leak" },
      ],
      outputs: [{ name: "powerLimit", path: `${ch}/Controls/PowerLimit`, scale: 1000, tolerance: 1, unit: "kW" }],
    });
    rack.points = { ...rack.points, powerKw: `${bmc}.powerKw`, leak: [`${bmc}.leak`] };
    rack.outputs = { ...rack.outputs, powerCap: `${bmc}.powerLimit` };
  }
  d.redfishClient = { devices };
}
