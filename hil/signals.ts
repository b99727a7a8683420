// The signals a HIL scenario's expectations read, by name:
//   truth.<rack>.<field>   the plant's ground truth (the simulator's, or a rig's)
//   truth.cdu.<field>
//   pod.<rack>.<field>     what the pod decided: the hot path's state and commands
//   pod.cdu.<field>
//   writes.<output id>     the commands that reached a device (the last one as a level; each one
//                          an event for `count`)
// A name's shape and field are checked by the scenario schema; its rack and output by the pod
// the scenario runs on (expandSignals): a typo is an error, never a signal that is always empty.
import type { PodConfig } from "../pod/config.js";

export const TRUTH_RACK_FIELDS = {
  valvePct: "%",
  supplyIsolationPct: "%",
  returnIsolationPct: "%",
  flowLpm: "L/min",
  supplyTempC: "°C",
  returnTempC: "°C",
  powerKw: "kW",
  powerOff: "0/1",
  gpuTempC: "°C",
  coolantLostL: "L",
} as const;
export const TRUTH_CDU_FIELDS = { dpKpa: "kPa", pumpSpeedPct: "%", pumpEnabled: "0/1", supplyTempC: "°C", returnTempC: "°C", totalFlowLpm: "L/min" } as const;
export const POD_RACK_FIELDS = {
  state: "0 normal, 1 isolating, 2 isolated, 3 escalated",
  isolated: "0/1",
  supplyOpen: "0/1",
  returnOpen: "0/1",
  valveOut: "%",
  failsafe: "0/1",
  leak: "0/1 a leak input debounced wet",
} as const;
export const POD_CDU_FIELDS = { pumpOut: "%", failsafe: "0/1" } as const;

const alt = (o: object): string => Object.keys(o).join("|");
/** The schema's pattern for one signal name (a rack may be `*`: every rack, less `except`). */
export const SIGNAL_PATTERN =
  `^(truth\\.([A-Za-z0-9_-]+|\\*)\\.(${alt(TRUTH_RACK_FIELDS)})` +
  `|truth\\.cdu\\.(${alt(TRUTH_CDU_FIELDS)})` +
  `|pod\\.([A-Za-z0-9_-]+|\\*)\\.(${alt(POD_RACK_FIELDS)})` +
  `|pod\\.cdu\\.(${alt(POD_CDU_FIELDS)})` +
  `|writes\\.[A-Za-z0-9_.:-]+)$`;

export type SignalSource = "truth-rack" | "truth-cdu" | "pod-rack" | "pod-cdu" | "writes";

export interface SignalRef {
  name: string;
  source: SignalSource;
  /** rack index for rack signals */
  rack: number;
  field: string;
  /** writes: the output id */
  output?: string;
  unit: string;
}

/**
 * Expands names (a `*` rack is every rack but those in `except`) into signals of this pod, or
 * throws naming every one it does not have.
 */
export function expandSignals(names: readonly string[], except: readonly string[], pod: Pick<PodConfig, "racks" | "cdu">, outputs: ReadonlySet<string>, where: string): SignalRef[] {
  const racks = pod.racks.map((r) => r.name);
  const unknown: string[] = [];
  const out: SignalRef[] = [];
  for (const name of names) {
    if (name.startsWith("writes.")) {
      const id = name.slice("writes.".length);
      if (!outputs.has(id)) unknown.push(`${name} (no output "${id}" in the pod's devices)`);
      else out.push({ name, source: "writes", rack: -1, field: "", output: id, unit: "" });
      continue;
    }
    const [kind, who, field] = name.split(".");
    if (who === "cdu") {
      const unit = kind === "truth" ? TRUTH_CDU_FIELDS[field as keyof typeof TRUTH_CDU_FIELDS] : POD_CDU_FIELDS[field as keyof typeof POD_CDU_FIELDS];
      if (unit === undefined) unknown.push(name);
      else out.push({ name, source: kind === "truth" ? "truth-cdu" : "pod-cdu", rack: -1, field, unit });
      continue;
    }
    const which = who === "*" ? racks.filter((r) => !except.includes(r)) : [who];
    for (const rack of which) {
      const index = racks.indexOf(rack);
      const unit = kind === "truth" ? TRUTH_RACK_FIELDS[field as keyof typeof TRUTH_RACK_FIELDS] : POD_RACK_FIELDS[field as keyof typeof POD_RACK_FIELDS];
      if (index < 0) unknown.push(`${name} (no rack "${rack}": ${racks.join(", ")})`);
      else if (unit === undefined) unknown.push(name);
      else out.push({ name: `${kind}.${rack}.${field}`, source: kind === "truth" ? "truth-rack" : "pod-rack", rack: index, field, unit });
    }
  }
  const badExcept = except.filter((r) => !racks.includes(r));
  if (badExcept.length > 0) unknown.push(`except: no rack ${badExcept.join(", ")}`);
  if (unknown.length > 0) throw new Error(`${where}: unknown signal${unknown.length === 1 ? "" : "s"} ${unknown.join("; ")}`);
  return out;
}
