// The demo pod's agent config (configs/demo-pod.yaml) as plain data, optionally pointed at a
// simulator on other ports: the demo, the tests and the benchmarks all start from it.
import { readFileSync } from "node:fs";
import { parseYaml } from "../lib/config-file.js";

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
