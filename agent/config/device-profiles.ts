// Device profiles: a device's register map written once, in a named file under profiles/ (its
// points and outputs with their data types and byte orders, its lease, where the map comes
// from), and how a rack or the CDU wired to such a device takes its points and outputs. A config
// names a profile and a unit id instead of listing registers:
//
//   modbus.devices[]: { name: rack-1, profile: podwarden-sim-rack, unitId: 11, tcp: { port: 15021 } }
//   racks[]:          { name: rack-1, device: rack-1, priority: 0 }
//
// Expanded here, after ${ENV} substitution and before the schema: what the schema, the checks
// and the daemon see is the config as if written by hand (test/device-profiles.test.ts holds
// configs/demo-pod.yaml, written with profiles, to its hand-written form). A device entry may
// override single points or outputs by name, or add its own; a rack or the CDU may override
// single points or outputs of what its device binds.
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { readTextBounded } from "../../lib/bounded-read.js";
import { ConfigError, parseYaml, validator } from "../../lib/config-file.js";
import { findPackage } from "../../lib/package-root.js";

/** What a profile file holds. Points and outputs are the modbus schema's, checked once expanded. */
export interface DeviceProfile {
  profile: string;
  description: string;
  /** where the map comes from: the device's manual (title, revision, table), or the simulator's source */
  source: string;
  points: Record<string, unknown>[];
  outputs: Record<string, unknown>[];
  lease?: Record<string, unknown>;
  /** a rack wired to this device: its points and outputs, by the profile's names */
  rack?: { points?: Record<string, unknown>; outputs?: Record<string, unknown> };
  /** the CDU wired to this device: its points, and its outputs or pumps, by the profile's names */
  cdu?: { points?: Record<string, unknown>; outputs?: Record<string, unknown>; pumps?: { name: string; points?: Record<string, unknown>; outputs?: Record<string, unknown> }[] };
}

const NAMED = { type: "object", required: ["name"], properties: { name: { type: "string", pattern: "^[A-Za-z0-9_-]+$" } } };
const BINDING = { type: "object", additionalProperties: { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] } };
const PROFILE_SCHEMA = {
  type: "object",
  additionalProperties: false,
  // an output module (a current-output module for valves) has no points of its own
  required: ["profile", "description", "source"],
  properties: {
    profile: { type: "string", pattern: "^[a-z0-9][a-z0-9-]*$", maxLength: 64 },
    description: { type: "string", minLength: 1 },
    source: { type: "string", minLength: 10 },
    points: { type: "array", items: NAMED, maxItems: 2000, default: [] },
    outputs: { type: "array", items: NAMED, maxItems: 2000, default: [] },
    lease: { type: "object" },
    rack: { type: "object", additionalProperties: false, properties: { points: BINDING, outputs: BINDING } },
    cdu: {
      type: "object",
      additionalProperties: false,
      properties: {
        points: BINDING,
        outputs: BINDING,
        pumps: { type: "array", items: { type: "object", additionalProperties: false, required: ["name"], properties: { name: { type: "string" }, points: BINDING, outputs: BINDING } } },
      },
    },
  },
};
const validateProfile = validator<DeviceProfile>(PROFILE_SCHEMA);

/** The directories profiles are looked up in, first match wins: the config's own `profiles/`, then podwarden's. */
export function profileDirs(configFile: string): string[] {
  const own = join(dirname(configFile), "profiles");
  const shipped = findPackage(import.meta.url)?.dir;
  return [...new Set([own, ...(shipped === undefined ? [] : [join(shipped, "profiles")])])];
}

/** The profiles available in `dirs`, by name. */
export function availableProfiles(dirs: readonly string[]): string[] {
  const names = new Set<string>();
  for (const d of dirs) if (existsSync(d)) for (const f of readdirSync(d)) if (f.endsWith(".yaml")) names.add(f.slice(0, -5));
  return [...names].sort();
}

/** Told each profile file a config used, and its text: what the config's hash covers besides the config's own text. */
export type ProfileSeen = (file: string, text: string) => void;

/** Reads and checks profile `name` from the first of `dirs` that has it; throws a ConfigError naming the file. */
export function loadProfile(name: string, dirs: readonly string[], seen?: ProfileSeen): DeviceProfile | null {
  for (const d of dirs) {
    const file = join(d, `${name}.yaml`);
    if (!existsSync(file)) continue;
    let text: string;
    try {
      text = readTextBounded(file);
    } catch (err) {
      throw new ConfigError(file, [`cannot read: ${(err as Error).message}`]);
    }
    seen?.(file, text);
    const p = validateProfile(parseYaml(text, file) ?? {}, file);
    if (p.profile !== name) throw new ConfigError(file, [`profile: "${p.profile}", but the file is ${name}.yaml: a profile is named by its file`]);
    const dup = (xs: { name?: unknown }[]): string[] => xs.map((x) => String(x.name)).filter((n, i, all) => all.indexOf(n) !== i);
    const dups = [...dup(p.points), ...dup(p.outputs)];
    if (dups.length > 0) throw new ConfigError(file, [`points and outputs: ${[...new Set(dups)].join(", ")} named twice`]);
    return p;
  }
  return null;
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);

/** A profile's list with the device's entries over it, by name: an entry with a profile's name changes only the keys it gives. */
function overlay(base: readonly Obj[], own: unknown, at: string, problems: string[]): Obj[] {
  const out = base.map((x) => ({ ...x }));
  if (own === undefined) return out;
  if (!Array.isArray(own)) {
    problems.push(`${at}: must be a list (of points or outputs over the profile's, by name)`);
    return out;
  }
  own.forEach((o: unknown, i) => {
    if (!isObj(o) || typeof o.name !== "string") {
      problems.push(`${at}[${i}]: must be an object with a name`);
      return;
    }
    const k = out.findIndex((x) => x.name === o.name);
    if (k >= 0) out[k] = { ...out[k], ...o };
    else out.push({ ...o });
  });
  return out;
}

/** A binding's names as the device's point ids (`<device>.<name>`). */
function bind(binding: Obj | undefined, device: string): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(binding ?? {})) out[k] = Array.isArray(v) ? v.map((n) => `${device}.${String(n)}`) : `${device}.${String(v)}`;
  return out;
}

/** The config data with every profile expanded; problems are added to `problems` (the config's own, named by where). */
export function expandProfiles(data: unknown, dirs: readonly string[], problems: string[], seen?: ProfileSeen): unknown {
  if (!isObj(data)) return data;
  const modbus = data.modbus;
  const devices = isObj(modbus) && Array.isArray(modbus.devices) ? (modbus.devices as unknown[]) : [];
  const profileOf = new Map<string, DeviceProfile>();
  const cache = new Map<string, DeviceProfile | null>();
  const expandedDevices = devices.map((d, i) => {
    if (!isObj(d) || d.profile === undefined) return d;
    const at = `modbus.devices[${i}]`;
    if (typeof d.profile !== "string") {
      problems.push(`${at}.profile: must be a profile's name`);
      return d;
    }
    if (!cache.has(d.profile)) cache.set(d.profile, loadProfile(d.profile, dirs, seen));
    const p = cache.get(d.profile) ?? null;
    if (p === null) {
      const have = availableProfiles(dirs);
      problems.push(`${at}.profile: no profile "${d.profile}" in ${dirs.join(" or ")}${have.length > 0 ? ` (there are: ${have.join(", ")})` : ""}`);
      return d;
    }
    if (typeof d.name === "string") profileOf.set(d.name, p);
    const { profile: _profile, points, outputs, lease, ...rest } = d;
    const out: Obj = { ...rest, points: overlay(p.points, points, `${at}.points`, problems), outputs: overlay(p.outputs, outputs, `${at}.outputs`, problems) };
    if (p.lease !== undefined || lease !== undefined) out.lease = { ...p.lease, ...(isObj(lease) ? lease : {}) };
    return out;
  });
  const result: Obj = { ...data };
  if (isObj(modbus) && Array.isArray(modbus.devices)) result.modbus = { ...modbus, devices: expandedDevices };

  const boundTo = (device: unknown, at: string, kind: "rack" | "cdu"): DeviceProfile | null => {
    if (typeof device !== "string") {
      problems.push(`${at}.device: must be a device's name (modbus.devices[].name)`);
      return null;
    }
    const p = profileOf.get(device);
    if (p === undefined) problems.push(`${at}.device: no device "${device}" with a profile in modbus.devices`);
    else if (p[kind] === undefined) problems.push(`${at}.device: "${device}"'s profile ${p.profile} says nothing of a ${kind === "rack" ? "rack" : "CDU"} (its ${kind} key)`);
    else return p;
    return null;
  };
  if (Array.isArray(data.racks)) {
    result.racks = data.racks.map((r: unknown, i) => {
      if (!isObj(r) || r.device === undefined) return r;
      const { device, ...rest } = r;
      const p = boundTo(device, `racks[${i}]`, "rack");
      if (p === null) return rest;
      const dev = device as string;
      return { ...rest, points: { ...bind(p.rack?.points, dev), ...(isObj(r.points) ? r.points : {}) }, outputs: { ...bind(p.rack?.outputs, dev), ...(isObj(r.outputs) ? r.outputs : {}) } };
    });
  }
  const cdu = data.cdu;
  if (isObj(cdu) && cdu.device !== undefined) {
    const { device, ...rest } = cdu;
    const p = boundTo(device, "cdu", "cdu");
    if (p === null) result.cdu = rest;
    else {
      const dev = device as string;
      const b = p.cdu ?? {};
      const out: Obj = { ...rest, points: { ...bind(b.points, dev), ...(isObj(cdu.points) ? cdu.points : {}) } };
      // the CDU's own pumps or outputs replace the profile's whole: a pump list is not merged by parts
      if (cdu.pumps === undefined && cdu.outputs === undefined) {
        if (b.pumps !== undefined) out.pumps = b.pumps.map((x) => ({ name: x.name, ...(x.outputs === undefined ? {} : { outputs: bind(x.outputs, dev) }), ...(x.points === undefined ? {} : { points: bind(x.points, dev) }) }));
        else if (b.outputs !== undefined) out.outputs = bind(b.outputs, dev);
      }
      result.cdu = out;
    }
  }
  return result;
}

/**
 * A config file's data with its device profiles expanded, in a hand-written config's shape: what
 * a tool that rewires a config edits (the HIL runner, the demo), before it is validated or
 * written out again for a daemon elsewhere (where the config's own profiles/ would not be found).
 */
export function configDataWithProfiles(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readTextBounded(path);
  } catch (err) {
    throw new ConfigError(path, [`cannot read: ${(err as Error).message}`]);
  }
  const problems: string[] = [];
  const data = expandProfiles(parseYaml(text, path) ?? {}, profileDirs(path), problems);
  if (problems.length > 0) throw new ConfigError(path, problems);
  return isObj(data) ? data : {};
}
