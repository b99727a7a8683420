// Config fuzzing: 10,000 mutated config files, from a seed (FUZZ_SEED), after the regression
// corpus (test/corpus/config). Each mutation is invalid by construction (a wrong type, a value out
// of its range, NaN or infinity, an unknown or missing key, a bad enum, min above max, a dangling
// reference, broken YAML); none may be accepted, and the error must name the key. A control group
// of valid changes must still be accepted, so the fuzzer is not passing by refusing everything.
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ConfigError } from "../lib/config-file.js";
import { agentConfigFromData, parseAgentConfig, validateAgentConfig } from "../agent/config/load.js";
import { AGENT_SCHEMA } from "../agent/config/schema.js";
import { demoConfigData } from "../cli/demo-config.js";
import { corpus, fuzzSeed, Prng } from "./helpers/fuzz.js";
import { countWords, fullCount } from "./helpers/counts.js";

/** Generated cases: 10,000 under `npm run soak -- --full-counts`, a sixth in `npm test` (helpers/counts.ts). */
const CASES = fullCount(10_000);

type Path = (string | number)[];
interface Site {
  path: Path;
  schema: Record<string, unknown>;
}

/** Every place in the data the schema describes, with the schema node that applies there. */
function sites(data: unknown, schema: Record<string, unknown>, path: Path = [], out: Site[] = []): Site[] {
  let s = schema;
  if (Array.isArray(s.oneOf)) {
    // SAFE_ACTION: the branch this value takes
    const branch = (s.oneOf as Record<string, unknown>[]).find((b) => (typeof data === "object" && data !== null ? b.type === "object" : b.enum !== undefined));
    if (branch === undefined) return out;
    s = branch;
  }
  out.push({ path, schema: s });
  if (data !== null && typeof data === "object" && !Array.isArray(data)) {
    const props = (s.properties ?? {}) as Record<string, Record<string, unknown>>;
    const extra = typeof s.additionalProperties === "object" ? (s.additionalProperties as Record<string, unknown>) : undefined;
    for (const [k, v] of Object.entries(data as Record<string, unknown>)) {
      const sub = props[k] ?? extra;
      if (sub !== undefined) sites(v, sub, [...path, k], out);
    }
  } else if (Array.isArray(data) && typeof s.items === "object") {
    data.forEach((v, i) => sites(v, s.items as Record<string, unknown>, [...path, i], out));
  }
  return out;
}

function getAt(root: unknown, path: Path): unknown {
  return path.reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], root);
}
function setAt(root: unknown, path: Path, v: unknown): void {
  const parent = getAt(root, path.slice(0, -1)) as Record<string | number, unknown>;
  parent[path[path.length - 1]] = v;
}
const keyName = (path: Path): string => String([...path].reverse().find((k) => typeof k === "string") ?? "");

const REF_PATHS: Path[] = [
  ["racks", 0, "points", "returnTempC"],
  ["racks", 1, "points", "flowLpm"],
  ["racks", 2, "outputs", "valve"],
  ["racks", 3, "points", "leak", 0],
  ["cdu", "points", "dpKpa"],
  ["cdu", "outputs", "pumpSpeed"],
];
const MIN_MAX: [Path, Path][] = [
  [["control", "returnTempSetpointMinC"], ["control", "returnTempSetpointMaxC"]],
  [["control", "dpSetpointMinKpa"], ["control", "dpSetpointMaxKpa"]],
  [["control", "rackLoop", "outMin"], ["control", "rackLoop", "outMax"]],
  [["control", "pumpLoop", "outMin"], ["control", "pumpLoop", "outMax"]],
  [["control", "points", "temperature", "min"], ["control", "points", "temperature", "max"]],
  [["supervisor", "overTemp", "warningC"], ["supervisor", "overTemp", "criticalC"]],
];
/** Keys with no cross-field rule: any value in range must be accepted. */
const FREE: Path[] = [
  ["control", "rackLoop", "kp"],
  ["control", "rackLoop", "ki"],
  ["control", "pumpLoop", "kd"],
  ["supervisor", "alarmClearDwellMs"],
  ["supervisor", "lossOfFlow", "delayMs"],
  ["control", "schedPriority"],
];

// A mutation carries the data and, for some, the file text: YAML parsing costs ~8 ms a file, so
// most cases go straight to the steps after parsing (the same code a file goes through next).
type Mutation = ({ invalid: true; kind: string; key: string } | { invalid: false; kind: string }) & ({ text: string } | { data: unknown });

function mutate(rng: Prng, base: Record<string, unknown>, all: Site[]): Mutation {
  const data = structuredClone(base);
  const r = rng.next();
  if (r < 0.1) {
    const path = rng.pick(FREE);
    const s = all.find((x) => JSON.stringify(x.path) === JSON.stringify(path))!.schema;
    const lo = s.minimum as number;
    const hi = s.maximum as number;
    const v = s.type === "integer" ? rng.int(lo, Math.min(hi, lo + 1_000_000)) : rng.range(lo, Math.min(hi, lo + 1000));
    setAt(data, path, v);
    return { data, invalid: false, kind: "valid change" };
  }
  if (r < 0.15) {
    const path = rng.pick(REF_PATHS);
    setAt(data, path, "nope.missing");
    return { data, invalid: true, kind: "dangling reference", key: keyName(path) };
  }
  if (r < 0.2) {
    const [a, b] = rng.pick(MIN_MAX);
    const hi = getAt(data, b) as number;
    setAt(data, a, hi + rng.range(0.5, 10));
    return { data, invalid: true, kind: "min above max", key: keyName(a) };
  }
  if (r < 0.25) {
    const text = stringify(data);
    const lines = text.split("\n");
    const i = rng.int(1, lines.length - 2);
    const broken = rng.pick([
      () => `${text}${lines[0]}\n`, // a top-level key twice
      () => [...lines.slice(0, i), "key: [unclosed, flow", ...lines.slice(i)].join("\n"),
      () => [...lines.slice(0, i), 'key: "unterminated', ...lines.slice(i)].join("\n"),
      () => text.slice(0, rng.int(1, text.length - 1)).replace(/[\s\S]$/, "\n: :"),
    ])();
    return { text: broken, invalid: true, kind: "broken YAML", key: "" };
  }
  // a schema-driven mutation at a random site
  for (;;) {
    const site = rng.pick(all);
    const s = site.schema;
    const v = site.path.length === 0 ? data : getAt(data, site.path);
    const key = keyName(site.path);
    const num = s.type === "number" || s.type === "integer";
    const options: (() => Mutation | null)[] = [
      () => (num ? (setAt(data, site.path, rng.pick(["12", true, null, [1], { x: 1 }])), { data, invalid: true, kind: "wrong type", key }) : null),
      () => (num && typeof s.maximum === "number" ? (setAt(data, site.path, (s.maximum) + Math.max(1, Math.abs(s.maximum) * rng.range(0.01, 2))), { data, invalid: true, kind: "above maximum", key }) : null),
      () => (num && typeof s.minimum === "number" ? (setAt(data, site.path, (s.minimum) - Math.max(1, Math.abs(s.minimum) * rng.range(0.01, 2))), { data, invalid: true, kind: "below minimum", key }) : null),
      () => (num ? (setAt(data, site.path, rng.pick([NaN, Infinity, -Infinity])), { data, invalid: true, kind: "non-finite", key }) : null),
      () => (s.type === "integer" && typeof v === "number" ? (setAt(data, site.path, v + 0.5), { data, invalid: true, kind: "fraction for an integer", key }) : null),
      () => (s.type === "string" && site.path.length > 0 ? (setAt(data, site.path, rng.pick([5, true, ["a"], { a: 1 }])), { data, invalid: true, kind: "wrong type", key }) : null),
      () => (s.type === "boolean" ? (setAt(data, site.path, rng.pick(["yes", 1, "true"])), { data, invalid: true, kind: "wrong type", key }) : null),
      () => (Array.isArray(s.enum) && site.path.length > 0 ? (setAt(data, site.path, "NotAMember"), { data, invalid: true, kind: "not in enum", key }) : null),
      () => {
        if (s.type !== "object" || s.additionalProperties !== false || typeof v !== "object" || v === null) return null;
        (v as Record<string, unknown>).bogusKey = 1;
        return { data, invalid: true, kind: "unknown key", key: "bogusKey" };
      },
      () => {
        const req = s.required as string[] | undefined;
        if (req === undefined || req.length === 0 || typeof v !== "object" || v === null) return null;
        const k = rng.pick(req);
        if (!(k in (v))) return null;
        delete (v as Record<string, unknown>)[k];
        return { data, invalid: true, kind: "missing required key", key: k };
      },
      () => (s.type === "object" && site.path.length > 0 ? (setAt(data, site.path, rng.pick([[], "text", 3])), { data, invalid: true, kind: "object replaced", key }) : null),
      () => (s.type === "array" && site.path.length > 0 ? (setAt(data, site.path, rng.pick([{}, "text", 3])), { data, invalid: true, kind: "array replaced", key }) : null),
    ];
    const m = rng.pick(options)();
    if (m !== null) return m;
  }
}

describe("config fuzzing", () => {
  it("refuses every file in the regression corpus", () => {
    for (const { file, value } of corpus<{ why: string; yaml: string }>("config")) {
      expect(() => parseAgentConfig(value.yaml, file), `${file}: ${value.why}`).toThrow(ConfigError);
    }
  });

  it(`accepts no invalid file among ${countWords(CASES)} mutations, and names the key in the error`, () => {
    const seed = fuzzSeed(0xc0f1_6000);
    const rng = new Prng(seed);
    // the full config as the agent sees it (defaults applied), so every key can be mutated
    const base = validateAgentConfig(demoConfigData(), "demo") as unknown as Record<string, unknown>;
    delete base.uplink; // the demo has none; an uplink block is added below to reach its keys
    base.uplink = validateAgentConfig({ ...structuredClone(base), uplink: { url: "mqtt://127.0.0.1:1883" } }, "demo").uplink;
    const all = sites(base, AGENT_SCHEMA);
    const counts = { invalid: 0, valid: 0 };
    const kinds = new Set<string>();
    for (let i = 0; i < CASES; i++) {
      const m = mutate(rng, base, all);
      kinds.add(m.kind);
      let problems: readonly string[] | null = null;
      // one case in ten goes through a file's text, YAML parser included
      const asText = "text" in m ? m.text : rng.chance(0.1) ? stringify(m.data) : null;
      try {
        if (asText !== null) parseAgentConfig(asText, "fuzz.yaml", {});
        else agentConfigFromData("data" in m ? m.data : null, "fuzz.yaml", {});
      } catch (err) {
        if (!(err instanceof ConfigError)) throw new Error(`FUZZ_SEED=${seed} case ${i} (${m.kind}): threw ${String(err)}\n${asText ?? JSON.stringify("data" in m ? m.data : null)}`, { cause: err });
        problems = err.problems;
      }
      if (m.invalid) {
        counts.invalid++;
        if (problems === null) throw new Error(`FUZZ_SEED=${seed} case ${i}: an invalid config (${m.kind}, ${m.key}) was accepted\n${asText ?? JSON.stringify("data" in m ? m.data : null)}`);
        if (m.key !== "" && !problems.some((p) => p.includes(m.key))) throw new Error(`FUZZ_SEED=${seed} case ${i} (${m.kind}): no problem names "${m.key}": ${problems.join(" | ")}`);
      } else {
        counts.valid++;
        if (problems !== null) throw new Error(`FUZZ_SEED=${seed} case ${i}: a valid change was refused: ${problems.join(" | ")}`);
      }
    }
    expect(counts.invalid + counts.valid).toBe(CASES);
    // the valid control group: about a tenth of the cases
    expect(counts.valid).toBeGreaterThan(CASES / 20);
    expect(kinds.size).toBeGreaterThanOrEqual(12);
  }, 300_000);
});
