// The signals a HIL scenario's expectations read, by name:
//   truth.<rack>.<field>   the plant's ground truth (the simulator's, or a rig's)
//   truth.cdu.<field>
//   truth.pod.powerKw      every rack's power drawn, summed: the pod against its power budget
//   pod.<rack>.<field>     what the pod decided: the hot path's state and commands
//   pod.cdu.<field>
//   writes.<output id>     the commands that reached a device (the last one as a level; each one
//                          an event for `count`)
//   alarm.<id>             1 while the daemon's alarm <id> is active (docs/agent.md's ids)
//   alarms.critical|warning  how many alarms of that severity are active (`except`: ids left out)
//   events.<type>          the daemon's events of that type (a count so far; each one an event)
//   uplink.online          mission control's view through the runner's own broker (`uplink: true`):
//   uplink.alarm.<id>      1 while connected with the pod's last state online; an alarm its last
//   uplink.events.<type>   `alarms` message listed; its events as they arrived (count; each one)
//   uplink.answers.<outcome>  the answers to mission control's commands (`command` steps) by
//                          outcome: ok, duplicate, or the rejection's code (count; each one)
//   uplink.telemetry.received|lost  the pod's telemetry messages mission control received, and
//                          those their `seq` says it never will (count; each one)
// A name's shape and field are checked by the scenario schema; its rack and output by the pod
// the scenario runs on (expandSignals): a typo is an error, never a signal that is always empty.
import { REJECT_CODES } from "../agent/commands/authorizer.js";
import type { PodConfig } from "../pod/config.js";

/** What a command's answer may say (docs/mqtt.md): ok, a copy answered again (duplicate), or a rejection's code. */
export const ANSWER_OUTCOMES = ["ok", "duplicate", ...REJECT_CODES] as const;

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
  connections: "Modbus TCP connections open at the rack's device (real time: virtual time has none)",
} as const;
export const TRUTH_CDU_FIELDS = { dpKpa: "kPa", pumpSpeedPct: "%", pumpEnabled: "0/1", supplyTempC: "°C", returnTempC: "°C", totalFlowLpm: "L/min" } as const;
export const POD_RACK_FIELDS = {
  state: "0 normal, 1 isolating, 2 isolated, 3 escalated",
  isolated: "0/1 isolated: for a leak, or by an operator",
  supplyOpen: "0/1",
  returnOpen: "0/1",
  valveOut: "%",
  failsafe: "0/1",
  leak: "0/1 a leak input debounced wet",
} as const;
export const POD_CDU_FIELDS = { pumpOut: "%", failsafe: "0/1" } as const;

/**
 * The daemon's alarm ids (docs/agent.md, "Alarms"), by what follows the colon: a rack, a loop
 * (`<rack>.valve`, `cdu.pump`), a Modbus device, a rack's isolation valve, or a fixed id (the
 * uplink's own among them: docs/mqtt.md's table). An
 * `alarm.` signal or an excepted id outside these is an error: a typo would never be active, and
 * a `never` on it would pass in silence. test/hil.test.ts holds this list to the docs' table.
 */
export const ALARM_IDS = {
  rack: ["leak", "isolation-failed", "flow-meter", "leak-sensor", "overtemp", "flow", "heat-balance", "no-coolant-power", "no-coolant-backstop", "no-power-output", "valve"],
  loop: ["failsafe", "degraded", "tune"],
  device: ["device"],
  valve: ["stroke"],
  pump: ["pump"],
  fixed: [
    "control:overrun",
    "control:stalled",
    "leak-thread",
    "power:budget",
    "power:coolant",
    "pumps:unavailable",
    "state:latches",
    "state:latches-write",
    "state:power-budget",
    "state:operator",
    "state:operator-write",
    "state:operator-dropped",
    "state:manifest",
    "state:gains",
    "state:gains-write",
    "state:gains-dropped",
    "state:strokes",
    "state:strokes-write",
    "recorder",
    "release:health-window",
    "state:release",
    "config:push-reverted",
    "state:config-push",
    "config:rejected",
    "service:metrics",
    "service:hmi",
    "service:redfish",
    "service:admin",
    "uplink:spool-write",
    "uplink:spool-read",
    "uplink:spool-overflow",
    "uplink:spool-corrupt",
    "uplink:commands",
  ],
} as const;

/** The daemon's event types (agent/pod-api.ts AgentEvent); test/hil.test.ts holds this list to the agent's. */
export const EVENT_TYPES = [
  "agent.started",
  "agent.stopping",
  "alarm.acknowledged",
  "alarm.cleared",
  "alarm.escalated",
  "alarm.raised",
  "command.audit",
  "isolation.proven",
  "leak.escalated",
  "maintenance.changed",
  "mode.changed",
  "override.expired",
  "pump.duty",
  "setpoint.expired",
  "stroke.ended",
  "stroke.started",
  "tuning.ended",
  "tuning.started",
] as const;

/** Why `id` is not one of this pod's alarm ids, or null when it is. */
export function alarmIdProblem(id: string, pod: Pick<PodConfig, "racks"> & Partial<Pick<PodConfig, "cdu">>, devices: readonly string[]): string | null {
  if ((ALARM_IDS.fixed as readonly string[]).includes(id)) return null;
  const colon = id.indexOf(":");
  const kind = colon < 0 ? id : id.slice(0, colon);
  const subject = colon < 0 ? "" : id.slice(colon + 1);
  const racks = pod.racks.map((r) => r.name);
  const is = (list: readonly string[]): boolean => list.includes(kind);
  if (is(ALARM_IDS.rack)) return racks.includes(subject) ? null : `no rack "${subject}" for ${kind}: (${racks.join(", ")})`;
  const supply = pod.cdu?.supplyControl !== undefined;
  if (is(ALARM_IDS.loop)) return subject === "cdu.pump" || (supply && subject === "cdu.supply") || racks.some((r) => subject === `${r}.valve`) ? null : `no loop "${subject}" for ${kind}: (<rack>.valve, cdu.pump${supply ? ", cdu.supply" : ""})`;
  if (is(ALARM_IDS.device)) return devices.includes(subject) ? null : `no device "${subject}" (${devices.join(", ")})`;
  if (is(ALARM_IDS.pump)) {
    const pumps = (pod.cdu?.pumps ?? []).map((p) => p.name);
    return pumps.includes(subject) ? null : `no pump "${subject}" for pump: (${pumps.join(", ") || "cdu.pumps lists none"})`;
  }
  if (is(ALARM_IDS.valve)) return racks.some((r) => subject === `${r}.supply` || subject === `${r}.return`) ? null : `no isolation valve "${subject}" for stroke: (<rack>.supply, <rack>.return)`;
  return `no alarm kind "${kind}"`;
}

const alt = (o: object): string => Object.keys(o).join("|");
/** The schema's pattern for one signal name (a rack may be `*`: every rack, less `except`). */
export const SIGNAL_PATTERN =
  `^(truth\\.([A-Za-z0-9_-]+|\\*)\\.(${alt(TRUTH_RACK_FIELDS)})` +
  `|truth\\.cdu\\.(${alt(TRUTH_CDU_FIELDS)})` +
  `|pod\\.([A-Za-z0-9_-]+|\\*)\\.(${alt(POD_RACK_FIELDS)})` +
  `|pod\\.cdu\\.(${alt(POD_CDU_FIELDS)})` +
  `|writes\\.[A-Za-z0-9_.:-]+` +
  `|alarm\\.[A-Za-z0-9_.:-]+` +
  `|alarms\\.(critical|warning)` +
  `|(uplink\\.)?events\\.(${EVENT_TYPES.map((t) => t.replace(".", "\\.")).join("|")})` +
  `|uplink\\.online` +
  `|uplink\\.answers\\.(${ANSWER_OUTCOMES.join("|")})` +
  `|uplink\\.telemetry\\.(received|lost)` +
  `|uplink\\.alarm\\.[A-Za-z0-9_.:-]+)$`;

export type SignalSource = "truth-rack" | "truth-cdu" | "pod-rack" | "pod-cdu" | "writes" | "alarm" | "alarms" | "events" | "uplink-online" | "uplink-alarm" | "uplink-events" | "uplink-answers" | "uplink-telemetry";

export interface SignalRef {
  name: string;
  source: SignalSource;
  /** rack index for rack signals */
  rack: number;
  field: string;
  /** writes: the output id */
  output?: string;
  /** alarm, uplink-alarm: its id; alarms: the severity; events, uplink-events: the type; uplink-answers: the outcome; uplink-telemetry: received or lost */
  key?: string;
  /** alarms: the ids left out */
  exceptIds?: string[];
  unit: string;
}

/**
 * Expands names (a `*` rack is every rack but those in `except`) into signals of this pod, or
 * throws naming every one it does not have.
 */
export function expandSignals(names: readonly string[], except: readonly string[], pod: Pick<PodConfig, "racks" | "cdu">, outputs: ReadonlySet<string>, devices: readonly string[], where: string): SignalRef[] {
  const racks = pod.racks.map((r) => r.name);
  const unknown: string[] = [];
  const out: SignalRef[] = [];
  // an excepted name is a rack (for a `*` rack) or an alarm id (for alarms.<severity>)
  const exceptIds = except.filter((x) => !racks.includes(x) && alarmIdProblem(x, pod, devices) === null);
  for (const name of names) {
    if (name === "uplink.online") {
      out.push({ name, source: "uplink-online", rack: -1, field: "", unit: "0/1 mission control sees the pod online" });
      continue;
    }
    if (name.startsWith("alarm.") || name.startsWith("uplink.alarm.")) {
      const uplink = name.startsWith("uplink.");
      const id = name.slice(uplink ? "uplink.alarm.".length : "alarm.".length);
      const problem = alarmIdProblem(id, pod, devices);
      if (problem !== null) unknown.push(`${name} (${problem})`);
      else out.push({ name, source: uplink ? "uplink-alarm" : "alarm", rack: -1, field: "", key: id, unit: uplink ? "0/1 active at mission control" : "0/1 active" });
      continue;
    }
    if (name.startsWith("uplink.answers.")) {
      out.push({ name, source: "uplink-answers", rack: -1, field: "", key: name.slice("uplink.answers.".length), unit: "answers received so far" });
      continue;
    }
    if (name.startsWith("uplink.telemetry.")) {
      const key = name.slice("uplink.telemetry.".length);
      out.push({ name, source: "uplink-telemetry", rack: -1, field: "", key, unit: key === "lost" ? "telemetry messages lost so far (gaps in seq)" : "telemetry messages received so far" });
      continue;
    }
    if (name.startsWith("uplink.events.")) {
      out.push({ name, source: "uplink-events", rack: -1, field: "", key: name.slice("uplink.events.".length), unit: "events received so far" });
      continue;
    }
    if (name.startsWith("alarms.")) {
      const severity = name.slice("alarms.".length) === "critical" ? "Critical" : "Warning";
      out.push({ name: exceptIds.length === 0 ? name : `${name} except ${exceptIds.join(", ")}`, source: "alarms", rack: -1, field: "", key: severity, exceptIds, unit: `${severity} alarms active` });
      continue;
    }
    if (name.startsWith("events.")) {
      out.push({ name, source: "events", rack: -1, field: "", key: name.slice("events.".length), unit: "events so far" });
      continue;
    }
    if (name.startsWith("writes.")) {
      const id = name.slice("writes.".length);
      if (!outputs.has(id)) unknown.push(`${name} (no output "${id}" in the pod's devices)`);
      else out.push({ name, source: "writes", rack: -1, field: "", output: id, unit: "" });
      continue;
    }
    const [kind, who, field] = name.split(".");
    if (kind === "truth" && who === "pod" && field === "powerKw") {
      // read like the CDU's truth: one value for the pod (a rack may not be named "pod" then)
      out.push({ name, source: "truth-cdu", rack: -1, field: "podPowerKw", unit: "kW" });
      continue;
    }
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
  const badExcept = except.filter((r) => !racks.includes(r) && !exceptIds.includes(r));
  if (badExcept.length > 0) unknown.push(`except: no rack or alarm id ${badExcept.join(", ")}`);
  if (unknown.length > 0) throw new Error(`${where}: unknown signal${unknown.length === 1 ? "" : "s"} ${unknown.join("; ")}`);
  return out;
}
