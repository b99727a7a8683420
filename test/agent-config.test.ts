// Agent config: the shipped configs load, bad ones fail with the key path and reason, secrets
// come from the environment, and check-config exits non-zero.
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import { loadAgentConfig, parseAgentConfig, type AgentConfig } from "../agent/config/load.js";
import { configWarnings } from "../agent/config/warnings.js";
import type { UplinkConfig } from "../agent/uplink/schema.js";
import type { ModbusConfig } from "../drivers/modbus/config.js";
import type { SafeAction } from "../hotpath-as/bank-config.js";
import { num, obj, optional } from "../lib/schema-builders.js";
import { ConfigError } from "../lib/config-file.js";
import { generateCommandKey } from "../agent/commands/signing.js";
import { splitModbus } from "../drivers/modbus/split.js";
import { podLayout } from "../pod/layout.js";
import { PodWiring } from "../pod/wiring.js";
import { run } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dirs.js";

// the demo as written by hand, register by register: the mutations below edit its text (the demo
// itself is written with device profiles, and loads as this does: test/device-profiles.test.ts)
const demo = readFileSync("test/fixtures/demo-pod-by-hand.yaml", "utf8");
const write = (text: string): string => {
  const f = join(tempDir("podwarden-cfg-"), "agent.yaml");
  writeFileSync(f, text);
  return f;
};

describe("agent config", () => {
  it("loads the demo config and the hardware template, with defaults applied", () => {
    const d = loadAgentConfig("configs/demo-pod.yaml").config;
    expect(d.racks).toHaveLength(8);
    expect(d.control.rackLoop.safeOnSensorFault).toBe("open");
    expect(d.control.points.leak.debounceFault).toBe(1);
    const t = loadAgentConfig("configs/pod-template.yaml", { MQTT_PASSWORD: "x" }).config;
    expect(t.modbus.buses.length).toBeGreaterThan(0);
    const rf = loadAgentConfig("configs/pod-redfish-template.yaml").config;
    expect(rf.redfishClient.devices.map((d) => d.name)).toEqual(["r01-bmc", "r02-bmc"]);
    expect(rf.racks[0].outputs.powerCap).toBe("r01-bmc.powerLimit");
  });

  it("the hardware template is written with device profiles, and its serial bus keeps the leak guarantee: the leak thread takes it whole", () => {
    const text = readFileSync("configs/pod-template.yaml", "utf8");
    expect(text).not.toMatch(/table: (discrete|input|holding|coil)/); // no register written by hand
    const t = loadAgentConfig("configs/pod-template.yaml", { MQTT_PASSWORD: "x" }).config;
    const serial = t.modbus.devices.filter((d) => d.bus === "rs485-1");
    expect(serial.length).toBeGreaterThan(0);
    const path = new PodWiring(t, podLayout(t), { writeCaps: false }).leakPath();
    expect(path.inputs.length + path.outputs.length).toBeGreaterThan(0);
    for (const id of [...path.inputs, ...path.outputs]) expect(serial.map((d) => d.name), id).toContain(id.slice(0, id.indexOf(".")));
    expect(t.control.isolation.leakThread).toBe(true);
    const split = splitModbus(t.modbus, new Set([...path.inputs, ...path.outputs]));
    expect(split.buses).toEqual(["rs485-1"]);
    expect(split.left).toEqual([]);
    expect(split.kept.buses).toEqual([]); // and the control plane runs on its own thread (no RTS bus)
  });

  it.each([
    ["an unknown key", (s: string) => s.replace("pod: pod-a", "pod: pod-a\npdo: typo"), /pdo: unknown key/],
    ["a wrong type", (s: string) => s.replace("returnTempSetpointC: 45", "returnTempSetpointC: warm"), /control\.returnTempSetpointC: must be number/],
    ["a value not among the allowed, listing them", (s: string) => s.replace("site: demo\n", "site: demo\nlog: { level: loud }\n"), /log\.level: must be one of "fatal", "error", "warn", "info", "debug", "trace"$/m],
    ["a non-finite number", (s: string) => s.replace("returnTempSetpointC: 45", "returnTempSetpointC: .inf"), /control\.returnTempSetpointC: must be number \(finite\)/],
    ["NaN", (s: string) => s.replace("dpSetpointKpa: 120", "dpSetpointKpa: .nan"), /control\.dpSetpointKpa: must be number \(finite\)/],
    ["a number out of range", (s: string) => s.replace("periodMs: 1\n", "periodMs: 1000\n"), /control\.periodMs: must be <= 100/],
    ["min > max", (s: string) => s.replace("control:\n", "control:\n  returnTempSetpointMinC: 60\n"), /returnTempSetpointMinC: must be <= returnTempSetpointMaxC/],
    ["a dangling point reference", (s: string) => s.replace("returnTempC: rack-3.returnTempC", "returnTempC: rack-3.returnTemp"), /racks\[2\]\.points\.returnTempC: no point "rack-3\.returnTemp"/],
    ["a dangling limit-switch reference", (s: string) => s.replace("supplyIsolationClosedLimit: rack-4.supplyIsoClosedLimit", "supplyIsolationClosedLimit: rack-4.nothing"), /racks\[3\]\.points\.supplyIsolationClosedLimit: no point "rack-4\.nothing"/],
    ["a dangling output reference", (s: string) => s.replace("valve: rack-2.valveCommandPct", "valve: rack-9.valveCommandPct"), /racks\[1\]\.outputs\.valve: no output "rack-9\.valveCommandPct"/],
    ["a missing required key", (s: string) => s.replace("site: demo\n", ""), /site: required key is missing/],
    ["a duplicate rack", (s: string) => s.replace("- name: rack-2\n    priority", "- name: rack-1\n    priority"), /duplicate rack name "rack-1"/],
    ["a budget below the minimums", (s: string) => s.replace("podKw: 900", "podKw: 0").replace("priority: 0\n", "priority: 0\n    minPowerKw: 10\n"), /podKw: 0 kW is below the racks' minimums/],
    ["a minimum-flow floor at the loss-of-flow threshold", (s: string) => s.replace("control:\n", "control:\n  rackLoop:\n    minFlowLpm: 5\n"), /control\.rackLoop\.minFlowLpm: rack "rack-1"'s minimum-flow floor 5 L\/min must be above supervisor\.lossOfFlow\.minLpm \(5 L\/min\)/],
    ["a rack's maximum flow not above its floor", (s: string) => s.replace("maxFlowLpm: 170      #", "maxFlowLpm: 6      #"), /racks\[0\]\.maxFlowLpm: 6 L\/min is not above the rack's minimum-flow floor \(6 L\/min\)/],
    ["a coolant return limit above the over-temperature Warning", (s: string) => s.replace("supervisor:\n", "supervisor:\n  overTemp: { warningC: 47, criticalC: 55 }\n"), /supervisor\.powerBudget\.coolant\.returnLimitC: must be <= supervisor\.overTemp\.warningC/],
    ["a CDU heat rejection below the minimums", (s: string) => s.replace("cdu:\n", "cdu:\n  ratedHeatKw: 5\n").replace("priority: 0\n", "priority: 0\n    minPowerKw: 10\n"), /cdu\.ratedHeatKw: 5 kW is below the racks' minimums \(10 kW\)/],
    ["one rack's floor below the loss-of-flow threshold", (s: string) => s.replace("- name: rack-2\n", "- name: rack-2\n    minFlowLpm: 3\n"), /racks\[1\]\.minFlowLpm: rack "rack-2"'s minimum-flow floor 3 L\/min must be above/],
    ["a safe value outside the envelope", (s: string) => s.replace("control:\n", "control:\n  pumpLoop:\n    safeOnSensorFault: { fixed: 20 }\n"), /pumpLoop\.safeOnSensorFault\.fixed: must be within \[outMin, outMax\]/],
    ["a YAML syntax error", (s: string) => s.replace("site: demo", "site: [demo"), /.+/],
    ["a duplicate key", (s: string) => s.replace("site: demo", "site: demo\nsite: other"), /unique/i],
    [
      "a leak escalation to rack power-off on a rack with no power-off output",
      (s: string) => s.replace("powerCap: rack-3.powerCapKw, powerOff: rack-3.powerOff,", "powerCap: rack-3.powerCapKw,").replace("  - name: rack-3\n", "  - name: rack-3\n    noCoolant: { action: cap }\n"),
      /racks\[2\]\.outputs\.powerOff: supervisor\.escalation\.rackPowerOff needs it/,
    ],
    ["a pump-stop escalation with a pump that has no enable output", (s: string) => s.replace("speed: cdu.pump2SpeedCommandPct, enable: cdu.pump2Enable", "speed: cdu.pump2SpeedCommandPct").replace("supervisor:\n", "supervisor:\n  escalation: { pumpStop: true }\n"), /cdu\.pumps\[\]\.outputs\.enable: supervisor\.escalation\.pumpStop needs it/],
    [
      "a one-pump CDU's pump-stop escalation with no pump-enable output",
      (s: string) => s.replace(/ {2}pumps:\n( {4}.*\n| {6}.*\n)+/, "  outputs: { pumpSpeed: cdu.pumpSpeedCommandPct }\n").replace("  pumpDuty: { rotateHours: 0 }\n", "").replace("supervisor:\n", "supervisor:\n  escalation: { pumpStop: true }\n"),
      /cdu\.outputs\.pumpEnable: supervisor\.escalation\.pumpStop needs it/,
    ],
    ["pump outputs both on cdu.outputs and in cdu.pumps", (s: string) => s.replace("  pumps:\n", "  outputs: { pumpSpeed: cdu.pumpSpeedCommandPct }\n  pumps:\n"), /cdu\.outputs: give the pump outputs here or in cdu\.pumps, not both/],
    ["a CDU with no pump", (s: string) => s.replace(/ {2}pumps:\n( {4}.*\n| {6}.*\n)+/, ""), /cdu\.outputs\.pumpSpeed: required \(or list redundant pumps in cdu\.pumps\)/],
    ["a lone pump in lead/lag duty", (s: string) => s.replace(/ {4}- name: pump-2\n( {6}.*\n)+/, ""), /cdu\.pumps: must NOT have fewer than 2 items/],
    ["two pumps of one name", (s: string) => s.replace("- name: pump-2", "- name: pump-1"), /cdu\.pumps\[1\]\.name: "pump-1" is used twice/],
    ["two pumps on one drive output", (s: string) => s.replace("speed: cdu.pump2SpeedCommandPct", "speed: cdu.pumpSpeedCommandPct"), /cdu\.pumps\[1\]: cdu\.pumpSpeedCommandPct is also cdu\.pumps\[0\] speed \(each pump needs its own\)/],
    ["a dangling pump status point", (s: string) => s.replace("running: cdu.pump2Running", "running: cdu.nothing"), /cdu\.pumps\[1\]\.points\.running: no point "cdu\.nothing"/],
    [
      "caps to write on a rack with no cap output",
      (s: string) => s.replace("powerCap: rack-4.powerCapKw, powerOff: rack-4.powerOff,", "powerOff: rack-4.powerOff,"),
      /racks\[3\]\.outputs\.powerCap: supervisor\.powerBudget\.writeCaps needs it \(or set writeCaps: false\)/,
    ],
      // the leak sensors' group slowed past their 3 s staleMs: stale before every poll, with no fault anywhere
    ["a leak sensor polled slower than it may age", (s: string) => s.replace("{ name: safety, periodMs: 20, priority: 0 }", "{ name: safety, periodMs: 5000, priority: 0 }"), /racks\[0\]\.points\.leak\[0\]: "rack-1\.leakState" is polled every 5000 ms \(modbus group "safety"\), not faster than control\.points\.leak\.staleMs \(3000 ms\)/],
])("rejects %s, naming the key", (_what, mutate, reason) => {
    const text = mutate(demo);
    expect(text).not.toBe(demo);
    expect(() => parseAgentConfig(text, "agent.yaml")).toThrow(ConfigError);
    expect(() => parseAgentConfig(text, "agent.yaml")).toThrow(reason);
  });

  it("accepts a CDU with no supply temperature sensor", () => {
    const text = demo.replace("points: { dpKpa: cdu.dpKpa, supplyTempC: cdu.supplyTempC, returnTempC: cdu.returnTempC, totalFlowLpm: cdu.totalFlowLpm, reservoirPct: cdu.reservoirPct }", "points: { dpKpa: cdu.dpKpa }");
    expect(text).not.toBe(demo);
    expect(parseAgentConfig(text, "agent.yaml").cdu.points.supplyTempC).toBeUndefined();
  });

  it("refuses one public key under two ids (the replay guard counts per id)", () => {
    const k = generateCommandKey();
    const text = `${demo}\nuplink:\n  url: mqtt://127.0.0.1:1\n  commands:\n    keys:\n      - { id: ops-1, publicKey: ${k.publicRaw}, roles: [operator] }\n      - { id: ops-2, publicKey: ${JSON.stringify(k.publicPem)}, roles: [engineer] }\n`;
    expect(() => parseAgentConfig(text, "agent.yaml")).toThrow(/uplink\.commands\.keys\[1\]\.publicKey: the same key as "ops-1"/);
  });

  it("takes secrets from the environment, and fails clearly when one is missing", () => {
    const text = `${demo}\nmqttIngest:\n  url: mqtt://127.0.0.1:1\n  password: \${INGEST_PW}\n  points: []\n`;
    expect(parseAgentConfig(text, "a.yaml", { INGEST_PW: "s3cret" }).mqttIngest?.password).toBe("s3cret");
    expect(() => parseAgentConfig(text, "a.yaml", {})).toThrow(/mqttIngest\.password: environment variable INGEST_PW is not set/);
  });

  describe.each([
    ["uplink", ""],
    ["mqttIngest", "  points: []\n"],
  ])("a broker connection (%s)", (section, rest) => {
    const withSection = (keys: string): string => `${demo}\n${section}:\n${keys}${rest}`;
    it.each([
      ["TLS on a plain URL", "  url: mqtt://broker:1883\n  tls: { caFile: /etc/hosts }\n", /\.tls: TLS settings need mqtts:\/\/ URLs/],
      ["half a client key pair", "  url: mqtts://broker:8883\n  tls: { certFile: /etc/hosts }\n", /\.tls: certFile and keyFile go together/],
      ["a CA file that is not there", "  url: mqtts://broker:8883\n  tls: { caFile: /nonexistent/ca.pem }\n", /\.tls\.caFile: no file \/nonexistent\/ca\.pem/],
      ["a password and a password file", "  url: mqtt://broker:1883\n  password: x\n  passwordFile: /etc/hosts\n", /\.passwordFile: give password or passwordFile, not both/],
      ["a password file that is not there", "  url: mqtt://broker:1883\n  passwordFile: /nonexistent/pw\n", /\.passwordFile: no file/],
    ])("rejects %s, naming the key", (_what, keys, reason) => {
      expect(() => parseAgentConfig(withSection(keys), "agent.yaml")).toThrow(new RegExp(`${section}${reason.source}`));
    });

    it("accepts mutual TLS with a private CA and a password file", () => {
      const c = parseAgentConfig(withSection("  url: mqtts://broker:8883\n  passwordFile: /etc/hosts\n  tls: { caFile: /etc/hosts, certFile: /etc/hosts, keyFile: /etc/hosts, servername: broker.site }\n"), "agent.yaml");
      expect(c[section as "uplink" | "mqttIngest"]).toMatchObject({ keepaliveS: 10, connectTimeoutMs: 5000, tls: { servername: "broker.site" } });
    });
  });

  it("refuses HMI certificate and users files that are not there or not valid, and half a TLS setting, naming the key", () => {
    expect(() => parseAgentConfig(`${demo}\nhmi:\n  tls: { certFile: /nonexistent/hmi.pem, keyFile: /etc/hosts }\n`, "agent.yaml")).toThrow(/hmi\.tls\.certFile: no file \/nonexistent\/hmi\.pem/);
    expect(() => parseAgentConfig(`${demo}\nhmi:\n  tls: { certFile: /etc/hosts }\n`, "agent.yaml")).toThrow(/hmi\.tls.*keyFile/);
    expect(parseAgentConfig(demo, "agent.yaml").hmi).toEqual({ enabled: true, host: "127.0.0.1", port: 8470, updateHz: 5, maxClients: 8, maxClientsPerAddress: 2, maxClientsPerUser: 4, livePageS: 60, trendMinutes: 15, sessionIdleS: 900, allowedHosts: [], knownAddresses: [], maxConnections: 64, maxConnectionsPerAddress: 16 });
    // a users file that is not there, or not valid, is named with what is wrong with it
    expect(() => parseAgentConfig(`${demo}\nhmi:\n  usersFile: /nonexistent/users.yaml\n`, "agent.yaml")).toThrow(/hmi\.usersFile \(\/nonexistent\/users\.yaml\): cannot read/);
    const users = write("users:\n  - { name: eve, roles: [root], passwordHash: x }\n");
    expect(() => parseAgentConfig(`${demo}\nhmi:\n  usersFile: ${users}\n`, "agent.yaml")).toThrow(/hmi\.usersFile .*roles/);
  });

  it("never writes the operator's file", () => {
    const f = write(demo);
    const before = statSync(f);
    loadAgentConfig(f);
    const after = statSync(f);
    expect(after.mtimeMs).toBe(before.mtimeMs);
    expect(readFileSync(f, "utf8")).toBe(demo);
  });

  it("check-config exits 0 on a valid file and 2 with the key path on an invalid one", async () => {
    const ok = await run("node", ["dist/cli/podwarden.js", "check-config", "-c", "configs/demo-pod.yaml"]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/valid/);
    expect(ok.stdout).not.toMatch(/warning/);
    // valid, with a warning: stuck detection on points nothing around them can judge
    const warned = await run("node", ["dist/cli/podwarden.js", "check-config", "-c", write(demo.replace("control:\n", "control:\n  points: { temperature: { stuckMs: 5000 } }\n"))]);
    expect(warned.code).toBe(0);
    expect(warned.stdout).toMatch(/^warning: control\.points\.temperature\.stuckMs: the racks' and the CDU's supply temperatures have no loop of their own, so time alone judges them/m);
    const bad = await run("node", ["dist/cli/podwarden.js", "check-config", "-c", write(demo.replace("dpSetpointKpa: 120", "dpSetpointKpa: -5"))]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/control\.dpSetpointKpa: must be >= 0/);
    const missing = await run("node", ["dist/cli/podwarden.js", "run", "-c", "/no/such/file.yaml"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read/);
    const usage = await run("node", ["dist/cli/podwarden.js", "frobnicate"]);
    expect(usage.code).toBe(2);
  });

  it("warns of stuck detection judged by time alone: every point of a kind with stuckMove 0, and the points without a loop of their own", () => {
    const c = parseAgentConfig(demo, "demo.yaml");
    expect(configWarnings(c)).toEqual([]); // off by default
    c.control.points.flow = { ...c.control.points.flow, stuckMs: 5000 }; // flow is judged by its rack's valve
    expect(configWarnings(c)).toEqual([]);
    c.control.points.pressure = { ...c.control.points.pressure, stuckMs: 5000, stuckMove: 0 };
    c.control.points.power = { ...c.control.points.power, stuckMs: 5000 };
    expect(configWarnings(c)).toEqual([
      "control.points.power.stuckMs: rack power has no loop of its own, so time alone judges them: a steady, noiseless plant reads unchanged for longer than 5000 ms and trips them",
      "control.points.pressure.stuckMs: with stuckMove 0, time alone judges every pressure point: a steady, noiseless plant reads unchanged for longer than 5000 ms and trips it",
    ]);
  });

  it("warns of a pump in lead/lag duty whose failure cannot be seen", () => {
    const c = parseAgentConfig(demo.replace("      points: { fault: cdu.pump2Tripped, running: cdu.pump2Running, speedPct: cdu.pump2SpeedPct }\n", ""), "demo.yaml");
    expect(configWarnings(c)).toEqual([
      "cdu.pumps[1] (pump-2): neither a fault nor a running point, so its failure cannot be seen and it never fails over; give its drive's trip bit or its proof of running",
    ]);
  });

  it("refuses a config file over 1 MiB before parsing it, with the reason, and reads one at the limit", () => {
    const huge = write(`${demo}
#${"x".repeat(1024 * 1024)}
`);
    expect(() => loadAgentConfig(huge)).toThrow(/cannot read: larger than the 1048576-byte limit/);
    const padded = `${demo}
#`;
    const atLimit = write(padded + "x".repeat(1024 * 1024 - Buffer.byteLength(padded)));
    expect(statSync(atLimit).size).toBe(1024 * 1024);
    expect(loadAgentConfig(atLimit).config.pod).toBeDefined();
  });
});

describe("coolant and power together", () => {
  it("defaults every rack to power-off while isolated, and refuses an action with no output to act on", () => {
    const d = loadAgentConfig("configs/demo-pod.yaml").config;
    expect(d.racks.every((r) => r.noCoolant.action === "power-off" && r.noCoolant.capKw === 0)).toBe(true);
    const noOff = demo.replace("powerCap: rack-1.powerCapKw, powerOff: rack-1.powerOff,", "powerCap: rack-1.powerCapKw,");
    expect(() => parseAgentConfig(noOff, "x.yaml")).toThrow(/racks\[0\]\.noCoolant\.action: power-off \(the default\) needs outputs\.powerOff .*or set action: cap with capKw/);
    const capped = noOff.replace("  - name: rack-1\n", "  - name: rack-1\n    noCoolant: { action: cap, capKw: 10 }\n").replace("supervisor:\n", "supervisor:\n  escalation: { rackPowerOff: false }\n");
    expect(parseAgentConfig(capped, "x.yaml").racks[0].noCoolant).toEqual({ action: "cap", capKw: 10, powerOffAboveC: 60 });
    const noCap = demo.replace("powerCap: rack-2.powerCapKw, powerOff: rack-2.powerOff,", "powerOff: rack-2.powerOff,").replace("  - name: rack-2\n", "  - name: rack-2\n    noCoolant: { action: cap }\n");
    expect(() => parseAgentConfig(noCap, "x.yaml")).toThrow(/racks\[1\]\.noCoolant\.action: cap needs outputs\.powerCap/);
  });

  it("lets a rack with no power output say so, and only one with none", () => {
    // neither output: the default power-off is refused, naming the default and the three choices
    const bare = demo.replace("powerCap: rack-1.powerCapKw, powerOff: rack-1.powerOff,", "").replace("supervisor:\n", "supervisor:\n  escalation: { rackPowerOff: false }\n").replace("  powerBudget:\n", "  powerBudget:\n    writeCaps: false\n");
    expect(bare).not.toBe(demo);
    expect(() => parseAgentConfig(bare, "x.yaml")).toThrow(/racks\[0\]\.noCoolant\.action: power-off \(the default\) needs outputs\.powerOff .*; or, where the rack has no power output podwarden can reach, set action: none, which leaves an isolated rack's power on and raises the Warning no-power-output:rack-1/);
    const none = bare.replace("  - name: rack-1\n", "  - name: rack-1\n    noCoolant: { action: none }\n");
    expect(parseAgentConfig(none, "x.yaml").racks[0].noCoolant.action).toBe("none");
    // a rack that has a power output cannot say it has none
    const wrong = demo.replace("  - name: rack-2\n", "  - name: rack-2\n    noCoolant: { action: none }\n");
    expect(() => parseAgentConfig(wrong, "x.yaml")).toThrow(/racks\[1\]\.noCoolant\.action: none says the rack has no power output, but it has outputs\.powerOff: use power-off/);
  });
});

describe("config types come from the schemas", () => {
  it("derives each section's type from its schema: defaulted keys present, optional keys optional, hand-typed sections as declared", () => {
    // compile-time: `npm run typecheck` fails if the derivation drifts from what the code reads
    expectTypeOf<AgentConfig["control"]["rackLoop"]["kp"]>().toEqualTypeOf<number>();
    expectTypeOf<AgentConfig["control"]["rackLoop"]["safeOnLeak"]>().toEqualTypeOf<SafeAction>();
    expectTypeOf<AgentConfig["control"]["isolation"]["leakSensorFault"]>().toEqualTypeOf<"hold" | "isolate">();
    expectTypeOf<AgentConfig["racks"][number]["points"]["leak"]>().toEqualTypeOf<string[]>();
    expectTypeOf<AgentConfig["racks"][number]["outputs"]["powerCap"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<AgentConfig["cdu"]["outputs"]["pumpEnable"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<AgentConfig["supervisor"]["powerBudget"]["writeCaps"]>().toEqualTypeOf<boolean>();
    expectTypeOf<AgentConfig["stateDir"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<AgentConfig["uplink"]>().toEqualTypeOf<UplinkConfig | undefined>();
    expectTypeOf<AgentConfig["modbus"]>().toEqualTypeOf<ModbusConfig>();
    expectTypeOf<AgentConfig["metrics"]>().toEqualTypeOf<{ enabled: boolean; host: string; port: number }>();
    expectTypeOf<AgentConfig["log"]["level"]>().toEqualTypeOf<"fatal" | "error" | "warn" | "info" | "debug" | "trace">();
    // run time: what validation returns has the keys the type says are present
    const c = loadAgentConfig("configs/demo-pod.yaml").config;
    expect(Object.keys(c.control.rackLoop).sort()).toEqual(["autotune", "deadband", "ffBias", "kd", "kff", "ki", "kp", "minFlowGain", "minFlowLpm", "outMax", "outMin", "outRate", "pvFilterS", "safeOnLeak", "safeOnLeaseLoss", "safeOnSensorFault", "safeOnShutdown", "spRamp", "tf"]);
    expect(c.metrics).toEqual({ enabled: true, host: "127.0.0.1", port: 9464 });
    expect(c.control.rackLoop.autotune).toEqual({ amplitude: 10, hysteresisMin: 0.02, deviationMax: 2, noiseS: 10, timeoutS: 900, cycles: 4, gainLimits: { kpMin: 0.04, kpMax: 400, kiMax: 40, kdMax: 400 } });
    expect(c.valveHealth).toEqual({ enabled: true, positionEpsPct: 0.3, stuckErrorPct: 5, stuckS: 20, stickBandWarnPct: 2, travelMaxS: 30, breakaways: 5, responseMs: 300 });
  });

  it("refuses to build a schema whose key would be absent while its type says present", () => {
    expect(() => obj({ a: num(0, 1, undefined, "no default") }, "broken section")).toThrow(/key "a" has no default, is not required and is not marked optional/);
    expect(() => obj({ a: num(0, 1, undefined, "required") }, "ok", ["a"])).not.toThrow();
    expect(() => obj({ a: optional(num(0, 1, undefined, "optional")) }, "ok")).not.toThrow();
  });
});
