// Config migrations (issue #51 item 3): every config an earlier podwarden shipped or accepted
// loads after `podwarden check-config --migrate`, each migration is exercised by one of them, a
// config of today is never "migrated", what a migration cannot decide is left to the operator,
// a removed key names its replacement, and the operator's file is never written.
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { agentConfigFromData, loadAgentConfig } from "../agent/config/load.js";
import { MIGRATIONS, migrateConfigText } from "../agent/config/migrations.js";
import { ConfigError, parseYaml } from "../lib/config-file.js";
import { run } from "./helpers/processes.js";

const OLD = "test/fixtures/old-configs";
const ENV = { MQTT_PASSWORD: "x", PODWARDEN_BMC_PASSWORD: "x" };
const fixtures = readdirSync(OLD).filter((f) => f.endsWith(".yaml"));
const problemsOf = (f: () => unknown): string[] => {
  try {
    f();
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
};
const dir = mkdtempSync(join(tmpdir(), "podwarden-migrate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the configs of earlier podwardens", () => {
  const used = new Set<string>();

  it.each(fixtures)("%s loads after its migration, and only then if it needed one", (f) => {
    const path = join(OLD, f);
    const text = readFileSync(path, "utf8");
    const before = problemsOf(() => loadAgentConfig(path, ENV));
    const m = migrateConfigText(text, path);
    for (const c of m.changes) used.add(c.migration.split(" ")[0]);
    expect(m.cannot).toEqual([]);
    // a config that loads needs no migration, and one that does not is told the command
    if (before.length === 0) expect(m.changes).toEqual([]);
    else {
      expect(m.changes.length).toBeGreaterThan(0);
      expect(before[before.length - 1]).toContain(`podwarden check-config -c ${path} --migrate`);
    }
    expect(problemsOf(() => agentConfigFromData(parseYaml(m.text, path), path, ENV))).toEqual([]);
    // migrated twice is migrated once
    expect(migrateConfigText(m.text, path).changes).toEqual([]);
  });

  it("exercise every migration", () => {
    expect([...used].sort()).toEqual(MIGRATIONS.map((m) => m.id).sort());
  });
});

it("a config of today is never migrated: the shipped ones, device profiles and all", () => {
  for (const f of readdirSync("configs").filter((x) => x.endsWith(".yaml") && !x.startsWith("sim"))) {
    const path = join("configs", f);
    expect(migrateConfigText(readFileSync(path, "utf8"), path), path).toMatchObject({ changes: [], cannot: [] });
  }
});

it("keeps the operator's comments and says on each value it wrote that it was migrated", () => {
  const path = join(OLD, "2026-11-30-705cf1c-site-without-power-outputs.yaml");
  const m = migrateConfigText(readFileSync(path, "utf8"), path);
  expect(m.text).toContain("# an unproven isolation powers the rack off; set true to also stop the pump");
  expect(m.text).toMatch(/writeCaps: false # migrated \(podwarden check-config --migrate\): no rack has a powerCap output/);
  expect(m.text).not.toMatch(/^\s+safeOnLeak:/m);
  expect(m.text).not.toMatch(/^\s+pumpLoop:/m);
  const migrated = agentConfigFromData(parseYaml(m.text, path), path, ENV);
  // the racks without a power output say so, and keep their power when isolated, as before
  expect(migrated.racks.map((r) => r.noCoolant.action)).toEqual(["none", "none"]);
  const why = m.changes.find((c) => c.path === "racks[0].noCoolant")!.what;
  expect(why).toContain("an isolated rack keeps its power");
  expect(why).toContain("no-power-output:r01");
});

it("leaves what it cannot decide to the operator: racks with a cap output beside racks without one", () => {
  const path = join(OLD, "2026-11-30-705cf1c-pod-template.yaml");
  const text = readFileSync(path, "utf8").replace("powerOff: r01.powerOff }", "powerOff: r01.powerOff, powerCap: r01.valve }");
  const m = migrateConfigText(text, path);
  expect(m.changes.map((c) => c.path)).not.toContain("supervisor.powerBudget.writeCaps");
  expect(m.cannot).toHaveLength(1);
  expect(m.cannot[0]).toMatch(/^supervisor\.powerBudget\.writeCaps: r02 has no outputs\.powerCap while other racks have one: give it one, or set writeCaps: false/);
  // and a rack with a cap output but no power-off: the cap it may keep is the plant's to say
  const capOnly = readFileSync(join(OLD, "2026-11-30-705cf1c-site-without-power-outputs.yaml"), "utf8").replace("returnIsolation: r01.returnIso }", "returnIsolation: r01.returnIso, powerCap: r01.valve }");
  const c = migrateConfigText(capOnly, path);
  expect(c.cannot.join("\n")).toContain("racks[0].noCoolant: r01 has outputs.powerCap but no powerOff");
  expect(c.changes.map((x) => x.path)).toContain("racks[1].noCoolant");
  expect(c.changes.map((x) => x.path)).not.toContain("racks[0].noCoolant");
});

it("names a removed key's replacement, and lists the values a key may take", () => {
  const data = parseYaml(readFileSync("configs/demo-pod.yaml", "utf8"), "configs/demo-pod.yaml") as { control: Record<string, unknown> };
  data.control.pumpLoop = { safeOnLeak: "hold" };
  data.control.rackLoop = { safeOnLeak: "shut", safeOnShutdown: { fixed: "x" } };
  const p = problemsOf(() => agentConfigFromData(data, "configs/demo-pod.yaml", ENV));
  expect(p).toContain(
    "control.pumpLoop.safeOnLeak: removed (5ee1c07, 2026-12-02): it acted on nothing: the pump serves every rack and holds its speed at a leak (an unproven isolation may stop it: supervisor.escalation.pumpStop); the pump's declared safe states are control.pumpLoop.safeOnSensorFault, safeOnShutdown and safeOnLeaseLoss (docs/safety.md). Delete the key; podwarden check-config --migrate does it",
  );
  expect(p).toContain('control.rackLoop.safeOnLeak: must be one of "open", "closed", "hold", or an object');
  expect(p).toContain('control.rackLoop.safeOnShutdown: must be one of "open", "closed", "hold", or an object (its problem below)');
  expect(p).toContain("control.rackLoop.safeOnShutdown.fixed: must be number (finite)");
  expect(p.join("\n")).not.toMatch(/exactly one schema|equal to one of the allowed values/);
});

describe("podwarden check-config --migrate", () => {
  const cli = async (...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => await run("node", ["dist/cli/podwarden.js", "check-config", ...args], 30_000, { ...process.env, ...ENV });

  it("prints the migrated file on stdout and each change and why on stderr, and never writes the operator's file", async () => {
    const path = join(OLD, "2026-11-30-705cf1c-site-without-power-outputs.yaml");
    const hash = (): string => createHash("sha256").update(readFileSync(path)).digest("hex");
    const before = hash();
    const r = await cli("-c", path, "--migrate");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(migrateConfigText(readFileSync(path, "utf8"), path).text);
    const lines = r.stderr.trim().split("\n");
    expect(lines.filter((l) => l.startsWith("migrated "))).toHaveLength(5);
    expect(lines.at(-1)).toMatch(/^the migrated config: valid \(5 changes\)/);
    // with --out, the file there; the config itself is refused as --out
    const out = join(dir, "pod.yaml");
    expect((await cli("-c", path, "--migrate", "--out", out)).code).toBe(0);
    expect(readFileSync(out, "utf8")).toBe(r.stdout);
    expect((await cli("-c", out)).code).toBe(0);
    const self = await cli("-c", path, "--migrate", "--out", path);
    expect(self.code).toBe(2);
    expect(self.stderr).toContain("--out: not the config itself");
    expect(hash()).toBe(before);
  }, 60_000);

  it("exits 2 with the problems left when the migrated config is still invalid", async () => {
    const path = join(dir, "bad.yaml");
    writeFileSync(path, readFileSync(join(OLD, "2026-11-30-705cf1c-pod-template.yaml"), "utf8").replace("podKw: 700", "podKw: -5"));
    const r = await cli("-c", path, "--migrate");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("migrated supervisor.powerBudget.writeCaps");
    expect(r.stderr).toMatch(/the migrated config: still invalid\n {2}- supervisor\.powerBudget\.podKw: must be >=/);
  }, 60_000);
});
