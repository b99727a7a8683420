// Loading the agent config: YAML, ${ENV} substitution for secrets, JSON Schema validation with
// defaults, then the rules a schema cannot say (min < max, references that must resolve).
// The operator's file is only ever read.
import { createHash } from "node:crypto";
import { basename } from "node:path";
import { parsePublicKey } from "../commands/signing.js";
import { ConfigError, parseYaml, readConfigText, validator } from "../../lib/config-file.js";
import { modbusProblems } from "../../drivers/modbus/config.js";
import { redfishClientProblems } from "../../drivers/redfish/config.js";
import { mqttConnectionProblems } from "../../lib/mqtt-connection.js";
import { hmiProblems } from "../hmi/schema.js";
import { redfishProblems } from "../redfish/schema.js";
import { controlProblems, noCoolantProblems, rackMinFlowLpm } from "../../pod/config.js";
import { failSafeProblems } from "../../pod/fail-safe.js";
import { pumpProblems, pumpsStoppable } from "../../pod/pumps.js";
import { podLayout } from "../../pod/layout.js";
import { brokerUrls, type UplinkConfig } from "../uplink/schema.js";
import { AGENT_SCHEMA, type AgentConfigData } from "./schema.js";
import { expandProfiles, profileDirs, type ProfileSeen } from "./device-profiles.js";
import { migrateConfigText, removedKeyHint } from "./migrations.js";

/** The whole config, derived from the schema: each section's type comes from its owner's schema. */
export type AgentConfig = AgentConfigData;

/** Replaces ${NAME} in every string with the environment variable; a missing one is an error. */
export function substituteEnv(data: unknown, env: NodeJS.ProcessEnv, path = "", problems: string[] = []): unknown {
  if (typeof data === "string") {
    return data.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      const v = env[name];
      if (v === undefined) {
        problems.push(`${path || "(top level)"}: environment variable ${name} is not set`);
        return "";
      }
      return v;
    });
  }
  if (Array.isArray(data)) return data.map((x, i) => substituteEnv(x, env, `${path}[${i}]`, problems));
  if (typeof data === "object" && data !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(data)) out[k] = substituteEnv(v, env, path === "" ? k : `${path}.${k}`, problems);
    return out;
  }
  return data;
}

function crossChecks(c: AgentConfig): string[] {
  const out: string[] = [];
  const ordered = (lo: number, hi: number, at: string, what: string): void => {
    if (!(lo <= hi)) out.push(`${at}: ${what}`);
  };
  out.push(...controlProblems(c.control));
  out.push(...noCoolantProblems(c.racks));
  out.push(...failSafeProblems(c));
  const s = c.supervisor;
  ordered(s.overTemp.warningC, s.overTemp.criticalC, "supervisor.overTemp.warningC", "must be <= criticalC");

  // every reference must resolve
  const points = new Set<string>();
  const outputs = new Set<string>();
  for (const d of c.modbus.devices) {
    for (const p of d.points) points.add(`${d.name}.${p.name}`);
    for (const o of d.outputs) outputs.add(`${d.name}.${o.name}`);
  }
  for (const p of c.mqttIngest?.points ?? []) {
    if (points.has(p.id)) out.push(`mqttIngest.points: id "${p.id}" is also a Modbus point`);
    points.add(p.id);
  }
  for (const d of c.redfishClient.devices) {
    for (const p of d.points) {
      const id = `${d.name}.${p.name}`;
      if (points.has(id)) out.push(`redfishClient.devices: point id "${id}" is also a Modbus or MQTT point`);
      points.add(id);
    }
    for (const o of d.outputs) {
      const id = `${d.name}.${o.name}`;
      if (outputs.has(id)) out.push(`redfishClient.devices: output id "${id}" is also a Modbus output`);
      outputs.add(id);
    }
  }
  const point = (id: string, at: string): void => {
    if (!points.has(id)) out.push(`${at}: no point "${id}" (define it under modbus.devices[].points, mqttIngest.points or redfishClient.devices[].points)`);
  };
  const output = (id: string | undefined, at: string): void => {
    if (id !== undefined && !outputs.has(id)) out.push(`${at}: no output "${id}" (define it under modbus.devices[].outputs or redfishClient.devices[].outputs)`);
  };
  const names = new Set<string>();
  c.racks.forEach((r, i) => {
    const at = `racks[${i}]`;
    if (names.has(r.name)) out.push(`${at}.name: duplicate rack name "${r.name}"`);
    names.add(r.name);
    ordered(r.minPowerKw, r.ratedKw, `${at}.minPowerKw`, "must be <= ratedKw");
    for (const key of ["returnTempC", "supplyTempC", "flowLpm", "powerKw"] as const) point(r.points[key], `${at}.points.${key}`);
    r.points.leak.forEach((l, j) => point(l, `${at}.points.leak[${j}]`));
    for (const key of ["valvePositionPct", "supplyIsolationOpenLimit", "supplyIsolationClosedLimit", "returnIsolationOpenLimit", "returnIsolationClosedLimit"] as const) {
      const id = r.points[key];
      if (id !== undefined) point(id, `${at}.points.${key}`);
    }
    for (const key of ["valve", "supplyIsolation", "returnIsolation", "powerCap", "powerOff", "failValve", "failIsolationOpen"] as const) output(r.outputs[key], `${at}.outputs.${key}`);
    // a configured action with nothing to act on would be a promise the pod cannot keep
    if (s.escalation.rackPowerOff && r.outputs.powerOff === undefined) out.push(`${at}.outputs.powerOff: supervisor.escalation.rackPowerOff needs it (or set rackPowerOff: false)`);
    // a floor at or below the loss-of-flow threshold makes that alarm a normal outcome for a
    // lightly loaded rack, and leaves a rack back from a leak reset short of the flow its power waits for
    const floor = rackMinFlowLpm(c.control, r);
    if (s.lossOfFlow.minLpm > 0 && !(floor > s.lossOfFlow.minLpm)) {
      const key = r.minFlowLpm === undefined ? "control.rackLoop.minFlowLpm" : `${at}.minFlowLpm`;
      out.push(`${key}: rack "${r.name}"'s minimum-flow floor ${floor} L/min must be above supervisor.lossOfFlow.minLpm (${s.lossOfFlow.minLpm} L/min), or the loop may hold it in a loss of flow and its power would not return after a reset`);
    }
    if (s.powerBudget.writeCaps && r.outputs.powerCap === undefined) out.push(`${at}.outputs.powerCap: supervisor.powerBudget.writeCaps needs it (or set writeCaps: false)`);
    if (r.maxFlowLpm !== undefined && !(r.maxFlowLpm > floor)) out.push(`${at}.maxFlowLpm: ${r.maxFlowLpm} L/min is not above the rack's minimum-flow floor (${floor} L/min)`);
  });
  if (s.escalation.pumpStop && !pumpsStoppable(c.cdu)) out.push(`${c.cdu.pumps === undefined ? "cdu.outputs.pumpEnable" : "cdu.pumps[].outputs.enable"}: supervisor.escalation.pumpStop needs it (or set pumpStop: false)`);
  point(c.cdu.points.dpKpa, "cdu.points.dpKpa");
  if (c.cdu.points.supplyTempC !== undefined) point(c.cdu.points.supplyTempC, "cdu.points.supplyTempC");
  output(c.cdu.outputs.pumpSpeed, "cdu.outputs.pumpSpeed");
  output(c.cdu.outputs.pumpEnable, "cdu.outputs.pumpEnable");
  output(c.cdu.outputs.failPumpSpeed, "cdu.outputs.failPumpSpeed");
  out.push(...pumpProblems(c.cdu));
  c.cdu.pumps?.forEach((p, i) => {
    for (const [key, id] of Object.entries(p.outputs)) output(id, `cdu.pumps[${i}].outputs.${key}`);
    for (const [key, id] of Object.entries(p.points)) if (id !== undefined) point(id, `cdu.pumps[${i}].points.${key}`);
  });
  output(c.cdu.supplyControl?.valve, "cdu.supplyControl.valve");
  output(c.cdu.supplyControl?.failValve, "cdu.supplyControl.failValve");
  if (c.cdu.supplyControl !== undefined && c.cdu.points.supplyTempC === undefined) out.push("cdu.supplyControl: needs cdu.points.supplyTempC, the temperature it holds");
  const minSum = c.racks.reduce((a, r) => a + r.minPowerKw, 0);
  if (minSum > s.powerBudget.podKw) out.push(`supervisor.powerBudget.podKw: ${s.powerBudget.podKw} kW is below the racks' minimums (${minSum} kW)`);
  if (c.cdu.ratedHeatKw !== undefined && minSum > c.cdu.ratedHeatKw) out.push(`cdu.ratedHeatKw: ${c.cdu.ratedHeatKw} kW is below the racks' minimums (${minSum} kW)`);
  // a limit the over-temperature alarm sits below would make that Warning the normal outcome of a coolant-bound rack
  ordered(s.powerBudget.coolant.returnLimitC, s.overTemp.warningC, "supervisor.powerBudget.coolant.returnLimitC", "must be <= supervisor.overTemp.warningC");
  if (c.uplink !== undefined) out.push(...uplinkProblems(c.uplink));
  if (c.uplink?.sparkplug.enabled === true) {
    const sp = c.uplink.sparkplug;
    const lay = podLayout(c);
    const loops = new Set(Array.from({ length: lay.loops }, (_, i) => lay.loopName(i)));
    sp.writableSetpoints.forEach((l, i) => {
      if (!loops.has(l)) out.push(`uplink.sparkplug.writableSetpoints[${i}]: no loop "${l}" (loops: <rack>.valve, cdu.pump${lay.supplyLoop === undefined ? "" : ", cdu.supply"})`);
    });
    const maxS = Math.floor(c.control.setpointLeaseMaxMs / 1000);
    if (sp.writeLeaseS > maxS) out.push(`uplink.sparkplug.writeLeaseS: ${sp.writeLeaseS} s is over control.setpointLeaseMaxMs (${maxS} s): the executor would refuse every write`);
  }
  out.push(...pollSlowerThanStaleProblems(c));
  if (c.mqttIngest !== undefined) out.push(...mqttConnectionProblems(c.mqttIngest, "mqttIngest", [c.mqttIngest.url]));
  out.push(...hmiProblems(c.hmi));
  out.push(...redfishProblems(c.redfish));
  out.push(...redfishClientProblems(c.redfishClient));
  return [...out, ...modbusProblems(c.modbus)];
}

/**
 * A Modbus input polled no faster than the hot path lets its sample age (control.points.<kind>.staleMs)
 * reads stale before each poll lands: its loop, or its leak sensor, would sit in fail-safe for
 * part of every period, or all of it, with no fault anywhere. Refused, naming both figures.
 */
function pollSlowerThanStaleProblems(c: AgentConfig): string[] {
  const out: string[] = [];
  const periodOf = new Map(c.modbus.groups.map((g) => [g.name, g.periodMs]));
  const polled = new Map<string, { periodMs: number; group: string }>();
  for (const d of c.modbus.devices) for (const p of d.points) polled.set(`${d.name}.${p.name}`, { periodMs: periodOf.get(p.group) ?? 0, group: p.group });
  type Kind = keyof AgentConfig["control"]["points"];
  const check = (id: string | undefined, kind: Kind, at: string): void => {
    const poll = id === undefined ? undefined : polled.get(id);
    const staleMs = c.control.points[kind].staleMs;
    if (poll === undefined || staleMs === 0 || poll.periodMs < staleMs) return;
    out.push(`${at}: "${id}" is polled every ${poll.periodMs} ms (modbus group "${poll.group}"), not faster than control.points.${kind}.staleMs (${staleMs} ms): it would read stale before each poll lands`);
  };
  c.racks.forEach((r, i) => {
    const at = `racks[${i}].points`;
    check(r.points.returnTempC, "temperature", `${at}.returnTempC`);
    check(r.points.supplyTempC, "temperature", `${at}.supplyTempC`);
    check(r.points.flowLpm, "flow", `${at}.flowLpm`);
    check(r.points.powerKw, "power", `${at}.powerKw`);
    r.points.leak.forEach((l, j) => check(l, "leak", `${at}.leak[${j}]`));
    for (const key of ["supplyIsolationClosedLimit", "returnIsolationClosedLimit"] as const) check(r.points[key], "limitSwitch", `${at}.${key}`);
  });
  check(c.cdu.points.dpKpa, "pressure", "cdu.points.dpKpa");
  check(c.cdu.points.supplyTempC, "temperature", "cdu.points.supplyTempC");
  return out;
}

function uplinkProblems(u: UplinkConfig): string[] {
  const out = mqttConnectionProblems(u, "uplink", brokerUrls(u));
  if ((u.url === undefined) === (u.brokers === undefined)) out.push("uplink: give url (one broker) or brokers (a list), not both and not neither");
  if (u.reconnect.baseMs > u.reconnect.maxMs) out.push("uplink.reconnect.baseMs: must be <= maxMs");
  if (u.spool.segmentBytes * 2 > u.spool.maxBytes) out.push("uplink.spool.segmentBytes: must be at most half of maxBytes");
  const ids = new Set<string>();
  const keys = new Map<string, string>();
  u.commands.keys.forEach((k, i) => {
    if (ids.has(k.id)) out.push(`uplink.commands.keys[${i}].id: duplicate key id "${k.id}"`);
    ids.add(k.id);
    try {
      // one key, one id: the replay guard counts per id, and roles would be ambiguous
      const raw = parsePublicKey(k.publicKey).export({ format: "der", type: "spki" }).toString("base64");
      const first = keys.get(raw);
      if (first !== undefined) out.push(`uplink.commands.keys[${i}].publicKey: the same key as "${first}"; give each key one id`);
      else keys.set(raw, k.id);
    } catch (err) {
      out.push(`uplink.commands.keys[${i}].publicKey: ${(err as Error).message}`);
    }
  });
  return out;
}

export const validateAgentConfig = validator<AgentConfig>(AGENT_SCHEMA, crossChecks, removedKeyHint);

export interface LoadedConfig {
  config: AgentConfig;
  /** sha256 of the file as read: published in `info` so mission control sees which config runs */
  hash: string;
  path: string;
}

export function parseAgentConfig(text: string, file: string, env: NodeJS.ProcessEnv = process.env, seen?: ProfileSeen): AgentConfig {
  return agentConfigFromData(parseYaml(text, file) ?? {}, file, env, seen);
}

/** The steps after YAML parsing: ${ENV} substitution, device profiles, then schema and cross-field validation. */
export function agentConfigFromData(data: unknown, file: string, env: NodeJS.ProcessEnv = process.env, seen?: ProfileSeen): AgentConfig {
  const problems: string[] = [];
  const substituted = substituteEnv(data, env, "", problems);
  if (problems.length > 0) throw new ConfigError(file, problems);
  // device profiles (profiles/): what the schema sees is the config as if written by hand
  const expanded = expandProfiles(substituted, profileDirs(file), problems, seen);
  if (problems.length > 0) throw new ConfigError(file, problems);
  return validateAgentConfig(expanded, file);
}

export function loadAgentConfig(path: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const text = readConfigText(path);
  // the hash is of what the config is made of: its own text and each device profile it used, so
  // an edited profile is a changed config (a reload takes it, mission control sees a new hash);
  // a config without profiles hashes as its text alone, as before profiles
  const profiles = new Map<string, string>();
  let config: AgentConfig;
  try {
    config = parseAgentConfig(text, path, env, (file, t) => profiles.set(file, t));
  } catch (err) {
    // a config an earlier podwarden accepted: say which command rewrites it (issue #51 item 3)
    const m = err instanceof ConfigError ? migrateConfigText(text, path) : null;
    if (m === null || (m.changes.length === 0 && m.cannot.length === 0)) throw err;
    throw new ConfigError(path, [
      ...(err as ConfigError).problems,
      `this config was written for an earlier podwarden: \`podwarden check-config -c ${path} --migrate\` prints it migrated (${m.changes.length} change${m.changes.length === 1 ? "" : "s"}${m.cannot.length > 0 ? `, ${m.cannot.length} for you to decide` : ""}), each with its reason (docs/operations.md, Upgrading)`,
    ]);
  }
  const hash = createHash("sha256").update(text);
  for (const [file, t] of [...profiles].sort(([a], [b]) => (a < b ? -1 : 1))) hash.update(`\0profile ${basename(file)}\0${t}`);
  return { config, hash: hash.digest("hex"), path };
}
