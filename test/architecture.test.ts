// The stage boundaries hold, and the linter enforces them: a forbidden import added to a real
// file of each folder fails `npm run lint` with the boundary's message, and an allowed one does not.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";
import { cycles, importGraph, importsOf } from "../tooling/import-cycles.js";
import { AGENT_CLASS_MESSAGE, AGENT_HOSTS, ALLOWED_INSIDE, FEATURE_MESSAGE, FEATURES, FORBIDDEN_IMPORTS } from "../eslint.boundaries.js";

/** A real file of each folder, one level down, so `../<folder>/` reaches the top of the tree. */
const SAMPLE: Record<string, string> = {
  "hotpath-as": "hotpath-as/bank-config.ts",
  lib: "lib/points.ts",
  drivers: "drivers/mqtt-ingest.ts",
  pod: "pod/wiring.ts",
  sim: "sim/virtual-pod.ts",
  agent: "agent/agent.ts",
  hil: "hil/virtual-runner.ts",
  cli: "cli/demo.ts",
  fleet: "fleet/watch.ts",
};

const ALL = ["hotpath-as", "lib", "pod", "drivers", "sim", "agent", "hil", "cli", "fleet", "tooling", "bench", "test", "scripts"];

describe("import boundaries", () => {
  // The project's own config (eslint.config.js), with only the boundary rule run and without
  // type information: the rule needs none, and building a TypeScript program for each of the
  // 130-odd samples was most of this suite's 26-32 s.
  const eslint = new ESLint({
    cwd: process.cwd(),
    ruleFilter: ({ ruleId }) => ruleId === "no-restricted-imports",
    overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
  });
  const restricted = async (file: string, target: string): Promise<string[]> => {
    const text = `import "../${target}/anything.js";\n${readFileSync(file, "utf8")}`;
    const [r] = await eslint.lintText(text, { filePath: file });
    return r.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
  };

  it("names a boundary for every product folder, and a sample file for each", () => {
    expect(Object.keys(FORBIDDEN_IMPORTS).sort()).toEqual(Object.keys(SAMPLE).sort());
  });

  it.each(Object.entries(SAMPLE))("%s: every forbidden import fails lint, every other folder passes", async (folder, file) => {
    const forbidden = new Set(FORBIDDEN_IMPORTS[folder]);
    for (const target of ALL) {
      if (target === folder) continue;
      const messages = await restricted(file, target);
      if (forbidden.has(target)) {
        expect(messages, `${folder} -> ${target}`).toHaveLength(1);
        expect(messages[0]).toContain(`${folder}/ may not import ${target}/ (docs/architecture.md: who may import whom)`);
      } else expect(messages, `${folder} -> ${target}`).toEqual([]);
    }
  });

  it.each(["fleet", "hil"] as const)("lets %s/ import the command format (agent/commands/) and nothing else of the agent", async (folder) => {
    for (const [target, refused] of [
      ["agent/commands/client.js", false],
      ["agent/commands/schema.js", false],
      ["agent/uplink/uplink.js", true],
      ["agent/agent.js", true],
      ["agent/recorder/flight-replay.js", true],
    ] as const) {
      const text = `import "../${target}";\n${readFileSync(SAMPLE[folder], "utf8")}`;
      const [r] = await eslint.lintText(text, { filePath: SAMPLE[folder] });
      const messages = r.messages.filter((m) => m.ruleId === "no-restricted-imports");
      expect(messages.length > 0, `${folder} -> ${target}`).toBe(refused);
    }
    expect(ALLOWED_INSIDE).toEqual({ fleet: { agent: ["commands"] }, hil: { agent: ["commands", "supervisor"] } });
  });

  it("lets hil/ run the daemon's supervisor (agent/supervisor/, pure) beside the virtual pod, and fleet/ not", async () => {
    for (const [folder, refused] of [
      ["hil", false],
      ["fleet", true],
    ] as const) {
      const text = `import "../agent/supervisor/supervisor.js";\n${readFileSync(SAMPLE[folder], "utf8")}`;
      const [r] = await eslint.lintText(text, { filePath: SAMPLE[folder] });
      const messages = r.messages.filter((m) => m.ruleId === "no-restricted-imports");
      expect(messages.length > 0, `${folder} -> agent/supervisor`).toBe(refused);
    }
    // the supervisor stays pure: nothing of the agent outside its own folder, only pod/, lib/ and the hot path's layout
    for (const f of readdirSync("agent/supervisor").filter((x) => x.endsWith(".ts"))) {
      const text = readFileSync(join("agent/supervisor", f), "utf8");
      for (const m of text.matchAll(/from "([^"]+)"/g)) expect(m[1], `agent/supervisor/${f}`).toMatch(/^(\.\/|\.\.\/\.\.\/(pod|lib|hotpath-as)\/)/);
    }
  });

  it("refuses the Agent class to every service inside agent/", async () => {
    for (const [file, spec] of [
      ["agent/uplink/uplink.ts", "../agent.js"],
      ["agent/ops/metrics.ts", "../agent.js"],
      ["agent/commands/executor.ts", "../agent.js"],
      ["agent/problems.ts", "./agent.js"],
      // the control plane's handle on the service plane's side is a service too
      ["agent/plane/control-plane.ts", "../agent.js"],
    ]) {
      const [r] = await eslint.lintText(`import { Agent } from "${spec}";\nexport type A = Agent;\n${readFileSync(file, "utf8")}`, { filePath: file });
      const messages = r.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
      expect(messages, file).toHaveLength(1);
      expect(messages[0]).toContain(AGENT_CLASS_MESSAGE);
    }
  });

  it("lets the Agent's hosts, and them alone, host the Agent, and keeps it out of sim/, hil/, cli/ and tooling", async () => {
    expect(AGENT_HOSTS).toEqual(["agent/plane/agent-host.ts", "agent/plane/control-plane-worker.ts", "agent/plane/in-process-plane.ts"]);
    const file = AGENT_HOSTS[1];
    const lint = async (spec: string): Promise<string[]> => {
      const [r] = await eslint.lintText(`import "${spec}";\n${readFileSync(file, "utf8")}`, { filePath: file });
      return r.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
    };
    expect(await lint("../agent.js")).toEqual([]);
    for (const target of ["sim", "hil", "cli", "tooling"]) expect(await lint(`../../${target}/x.js`), target).toHaveLength(1);
  });

  it.each(FEATURES)("lets the %s feature import the pod context, the faces, the worker's formats, pod/, lib/ and the hot path, and nothing else of the agent", async (feature) => {
    const file = readdirSync(`agent/${feature}`).find((f) => f.endsWith(".ts"));
    expect(file, feature).toBeDefined();
    const path = `agent/${feature}/${file}`;
    const lint = async (spec: string): Promise<string[]> => {
      const [r] = await eslint.lintText(`import "${spec}";\n${readFileSync(path, "utf8")}`, { filePath: path });
      return r.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
    };
    for (const allowed of ["./x.js", "../pod-context.js", "../pod-api.js", "../control/flight-ring.js", "../../pod/wiring.js", "../../lib/points.js", "../../hotpath-as/assembly/layout.js"]) {
      expect(await lint(allowed), `${feature} -> ${allowed}`).toEqual([]);
    }
    const others = FEATURES.filter((f) => f !== feature).map((f) => `../${f}/x.js`);
    for (const refused of ["../agent.js", "../loop/pod-loop.js", "../uplink/uplink.js", "../hmi/server.js", "../commands/executor.js", "../supervisor/supervisor.js", "../lifecycle.js", "../plane/control-plane.js", "../../drivers/modbus/driver.js", ...others]) {
      const messages = await lint(refused);
      expect(messages.length, `${feature} -> ${refused}`).toBeGreaterThan(0);
      expect(messages.some((m) => m.includes(FEATURE_MESSAGE) || m.includes(AGENT_CLASS_MESSAGE)), `${feature} -> ${refused}`).toBe(true);
    }
  });

  it("keeps every feature out of the pod loop: it runs them through PodFeature", async () => {
    const path = "agent/loop/pod-loop.ts";
    for (const feature of FEATURES) {
      const [r] = await eslint.lintText(`import "../${feature}/x.js";\n${readFileSync(path, "utf8")}`, { filePath: path });
      expect(r.messages.filter((m) => m.ruleId === "no-restricted-imports"), feature).toHaveLength(1);
    }
    const [ok] = await eslint.lintText(`import "../pod-context.js";\n${readFileSync(path, "utf8")}`, { filePath: path });
    expect(ok.messages.filter((m) => m.ruleId === "no-restricted-imports")).toEqual([]);
  });

  it("keeps the rules the issue set: the hot path imports nothing of ours, drivers only lib, the pod stage only the hot path and lib, sim never the agent, product never tooling", () => {
    const product = ["hotpath-as", "lib", "pod", "drivers", "sim", "agent", "hil", "cli"];
    const may = (f: string): string[] => ALL.filter((t) => t !== f && !FORBIDDEN_IMPORTS[f].includes(t));
    expect(may("hotpath-as")).toEqual([]);
    expect(may("drivers")).toEqual(["lib"]);
    expect(may("pod")).toEqual(["hotpath-as", "lib"]);
    expect(FORBIDDEN_IMPORTS.sim).toContain("agent");
    // the HIL runner judges the pod from outside; nothing in the product leans on it
    expect(FORBIDDEN_IMPORTS.hil).toContain("agent");
    for (const f of ["hotpath-as", "lib", "drivers", "pod", "sim", "agent"]) expect(FORBIDDEN_IMPORTS[f], `${f} -> hil`).toContain("hil");
    for (const f of product) for (const t of ["tooling", "bench", "test", "scripts"]) expect(FORBIDDEN_IMPORTS[f], `${f} -> ${t}`).toContain(t);
  });
});

describe("import cycles", () => {
  it("finds a cycle where there is one, and none where there is not", () => {
    expect(importsOf("agent/x.ts", 'import type { A } from "./a.js";\nexport { B } from "../lib/b.js";\nimport "node:fs";\nconst c = await import("./c.js");')).toEqual(["agent/a.ts", "lib/b.ts", "agent/c.ts"]);
    const g = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a", "d"]],
      ["d", []],
      ["e", ["e2"]],
      ["e2", []],
    ]);
    expect(cycles(g)).toEqual([["a", "b", "c"]]);
    expect(cycles(new Map([["a", ["b"]], ["b", []]]))).toEqual([]);
  });

  it("has none among the product's modules, type imports included: each can be read and split without the others of a loop", () => {
    const graph = importGraph(["hotpath-as", "lib", "pod", "drivers", "sim", "agent", "hil", "cli", "fleet"], ["static"]);
    expect(graph.size).toBeGreaterThan(150);
    expect(cycles(graph)).toEqual([]);
  });
});
