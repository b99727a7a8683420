// The demo pod's agent config (configs/demo-pod.yaml) as plain data, optionally pointed at a
// simulator on other ports: the demo, the tests and the benchmarks all start from it.
import { readFileSync } from "node:fs";
import { parseYaml } from "../lib/config-file.js";
import { validateAgentConfig, type AgentConfig } from "../agent/config/load.js";
import { RETURN_TX_RANGE_C } from "../sim/devices/pod-devices.js";

export const DEMO_AGENT_CONFIG = "configs/demo-pod.yaml";

export interface DemoConfigData extends Record<string, unknown> {
  modbus: { groups: { name: string; periodMs: number }[]; devices: { name: string; tcp: { port: number } }[] };
}

/** Parses the demo config; `portOf` moves each Modbus device to the simulator's actual port. */
export function demoConfigData(portOf?: (device: string) => number | undefined, path = DEMO_AGENT_CONFIG): DemoConfigData {
  const data = parseYaml(readFileSync(path, "utf8"), path) as DemoConfigData;
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
