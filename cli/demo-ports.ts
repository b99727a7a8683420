// The demo's ports (issue #51 item 5): each one can be set by a flag (0: a free one, which the
// demo then prints), and a port set by a flag that another program holds stops the demo with one
// line naming the port and its flag, before anything has started. A port left to its default
// (the configs' ports) that is taken moves to a free one, said on the output: the demo runs
// beside a daemon or another demo on the same host. A raw EADDRINUSE stack trace was the answer
// to both before.
import { createServer } from "node:net";
import { UsageError } from "./usage-error.js";

/** Every port the demo listens on. Unset: the configured one, or a free one where it is taken. */
export interface DemoPorts {
  /** the embedded MQTT broker */
  broker?: number;
  /** the simulator's Modbus devices: the CDU on it, rack N on it + N */
  devices?: number;
  /** the simulator's rack BMCs (--redfish-racks): rack N's on it + N - 1 */
  bmcs?: number;
  /** the simulator's fault API */
  faults?: number;
  hmi?: number;
  metrics?: number;
  /** the pod's own Redfish service */
  redfish?: number;
}

/** Each port's flag, for the help and for the line a taken port gives. */
export const DEMO_PORT_FLAGS: Record<keyof DemoPorts, string> = {
  broker: "--broker-port",
  devices: "--device-port",
  bmcs: "--bmc-port",
  faults: "--fault-port",
  hmi: "--hmi-port",
  metrics: "--metrics-port",
  redfish: "--redfish-port",
};

/** The ports the flags set, each checked to be a port (0-65535); `--free-ports` sets every unset one to 0. */
export function demoPortsFromFlags(values: Readonly<Record<string, string | boolean | undefined>>): DemoPorts {
  const ports: DemoPorts = {};
  for (const [key, flag] of Object.entries(DEMO_PORT_FLAGS) as [keyof DemoPorts, string][]) {
    const v = values[flag.slice(2)];
    if (typeof v === "string") {
      const n = Number(v);
      if (v.trim() === "" || !Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`${flag}: ${v} is not a port (0-65535; 0 takes a free one)`);
      ports[key] = n;
    } else if (values["free-ports"] === true) ports[key] = 0;
  }
  return ports;
}

/** Whether something on this host already listens on host:port. */
async function taken(host: string, port: number): Promise<boolean> {
  const s = createServer();
  return await new Promise<boolean>((resolve, reject) => {
    s.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" ? resolve(true) : reject(err)));
    s.listen({ port, host, exclusive: true }, () => s.close(() => resolve(false)));
  });
}

/**
 * Refuses, with one line, a port set by a flag that is taken: `count` ports from it for a base
 * port (the devices, the BMCs). 0 is never taken.
 */
export async function checkSetPorts(wanted: readonly { key: keyof DemoPorts; port: number | undefined; count?: number; host: string }[]): Promise<void> {
  for (const w of wanted) {
    if (w.port === undefined || w.port === 0) continue;
    for (let p = w.port; p < w.port + (w.count ?? 1); p++) {
      if (await taken(w.host, p)) {
        const what = (w.count ?? 1) > 1 ? `port ${p} (of ${w.port}-${w.port + (w.count ?? 1) - 1})` : `port ${p}`;
        throw new UsageError(`demo: ${what} set by ${DEMO_PORT_FLAGS[w.key]} is in use on ${w.host}: choose another, or 0 for a free one`);
      }
    }
  }
}

/** One line naming every port the demo listens on, as it got them. */
export function portsLine(p: { broker: number | null; devices: readonly number[]; bmcs: readonly number[]; faults: number; hmi?: string; metrics?: string; redfish?: string }): string {
  // in the devices' order (the CDU, then rack 1, 2, ...): a range where they follow on
  const range = (ports: readonly number[]): string => {
    const contiguous = ports.every((x, i) => i === 0 || x === ports[i - 1] + 1);
    return contiguous && ports.length > 1 ? `${ports[0]}-${ports[ports.length - 1]}` : ports.join(",");
  };
  const portOf = (u: string | undefined): string | null => (u === undefined ? null : new URL(u).port);
  const parts = [
    p.broker === null ? null : `broker ${p.broker}`,
    `devices ${range(p.devices)}`,
    p.bmcs.length > 0 ? `BMCs ${range(p.bmcs)}` : null,
    `fault API ${p.faults}`,
    portOf(p.hmi) === null ? null : `HMI ${portOf(p.hmi)}`,
    portOf(p.metrics) === null ? null : `metrics ${portOf(p.metrics)}`,
    portOf(p.redfish) === null ? null : `Redfish ${portOf(p.redfish)}`,
  ];
  return `ports: ${parts.filter((x) => x !== null).join(", ")}`;
}
