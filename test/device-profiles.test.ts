// Device profiles (agent/config/device-profiles.ts, profiles/): the simulator's devices written
// as profiles give the hand-written demo exactly; a profile's map is the simulator's own; a
// device or a rack overrides single points; a wrong name or file is an error naming where.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadAgentConfig, parseAgentConfig } from "../agent/config/load.js";
import { availableProfiles, loadProfile, profileDirs } from "../agent/config/device-profiles.js";
import { ConfigError } from "../lib/config-file.js";
import { cduPoints, rackPoints } from "./helpers/driver.js";
import { tempDir } from "./helpers/temp-dirs.js";

const shipped = profileDirs("configs/demo-pod.yaml");

describe("device profiles", () => {
  it("configs/demo-pod.yaml, written with the simulator's profiles, loads as the hand-written demo, key for key", () => {
    const byProfile = loadAgentConfig("configs/demo-pod.yaml").config;
    // its x- keys held the YAML anchors of the registers, and nothing reads them
    const byHand = Object.fromEntries(Object.entries(loadAgentConfig("test/fixtures/demo-pod-by-hand.yaml").config).filter(([k]) => !k.startsWith("x-")));
    expect(byProfile).toEqual(byHand);
  });

  it("holds each simulator profile to the simulator's own register map: address, table, type, order and scale", () => {
    for (const [name, sim] of [
      ["podwarden-sim-rack", rackPoints()],
      ["podwarden-sim-cdu", cduPoints()],
    ] as const) {
      const p = loadProfile(name, shipped)!;
      expect(p.source).toMatch(/sim\/devices\/pod-devices\.ts/);
      // by where it is: the demo names a few registers its own way (supplyIsoOpenLimit)
      for (const pt of [...p.points, ...p.outputs]) {
        const s = sim.find((x) => x.table === pt.table && x.address === pt.address);
        expect(s, `${name}: ${String(pt.name)} is the simulator's`).toBeDefined();
        expect({ table: pt.table, address: pt.address, type: pt.type, order: pt.order ?? "ABCD", scale: pt.scale ?? 1 }, `${name}.${String(pt.name)}`).toEqual({ table: s!.table, address: s!.address, type: s!.type, order: s!.order, scale: s!.scale });
      }
    }
  });

  it("lets a device override one point and add its own, and a rack override one binding", () => {
    const text = `
site: t
pod: p
racks:
  - { name: r1, device: d1, outputs: { powerOff: d1.relay } }
cdu: { device: c }
modbus:
  groups: [{ name: safety, periodMs: 20, priority: 0 }, { name: control, periodMs: 100, priority: 1 }, { name: telemetry, periodMs: 1000, priority: 2 }]
  devices:
    - { name: c, profile: podwarden-sim-cdu, unitId: 1, tcp: { port: 15020 } }
    - name: d1
      profile: podwarden-sim-rack
      unitId: 11
      tcp: { port: 15021 }
      lease: { periodMs: 250 }
      points: [{ name: leakState, group: control }]
      outputs: [{ name: relay, table: coil, address: 9, type: bool }]
`;
    const c = parseAgentConfig(text, "configs/override.yaml");
    const d1 = c.modbus.devices.find((d) => d.name === "d1")!;
    expect(d1.points.find((p) => p.name === "leakState")).toMatchObject({ address: 7, group: "control" });
    expect(d1.outputs.map((o) => o.name)).toContain("relay");
    expect(d1.lease).toEqual({ style: "heartbeat-counter", address: 2, periodMs: 250, value: 1, safeValues: [] });
    expect(c.racks[0].outputs.powerOff).toBe("d1.relay");
    expect(c.racks[0].outputs.valve).toBe("d1.valveCommandPct");
    expect(c.racks[0].points.leak).toEqual(["d1.leakState"]);
    expect(c.cdu.pumps?.map((p) => p.name)).toEqual(["pump-1", "pump-2"]);
  });

  it("refuses an unknown profile, a rack whose device has none, and a damaged profile file, naming where", () => {
    const base = (device: string, rackDevice = "d1"): string => `
site: t
pod: p
racks: [{ name: r1, device: ${rackDevice} }]
cdu: { points: { dpKpa: d1.flowLpm } , outputs: { pumpSpeed: d1.valveCommandPct } }
modbus:
  devices: [${device}]
`;
    const err = (text: string, file = "configs/x.yaml"): string => {
      try {
        parseAgentConfig(text, file);
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      }
      throw new Error("accepted");
    };
    expect(err(base("{ name: d1, profile: podwarden-sim-rak, unitId: 1, tcp: { port: 1502 } }"))).toMatch(/modbus\.devices\[0\]\.profile: no profile "podwarden-sim-rak" in .* \(there are: .*podwarden-sim-rack/);
    expect(err(base("{ name: d1, profile: podwarden-sim-rack, unitId: 1, tcp: { port: 1502 } }", "d2"))).toMatch(/racks\[0\]\.device: no device "d2" with a profile in modbus\.devices/);
    expect(err(base("{ name: d1, profile: podwarden-sim-cdu, unitId: 1, tcp: { port: 1502 } }"))).toMatch(/racks\[0\]\.device: "d1"'s profile podwarden-sim-cdu says nothing of a rack/);
    // a site's own profile, next to its config, with a mistake in it
    const dir = tempDir("profiles");
    mkdirSync(join(dir, "profiles"));
    writeFileSync(join(dir, "profiles", "site-io.yaml"), "profile: other-name\ndescription: x\nsource: the module's manual, rev 3, table 4\npoints: []\n");
    expect(err(base("{ name: d1, profile: site-io, unitId: 1, tcp: { port: 1502 } }"), join(dir, "pod.yaml"))).toMatch(/site-io\.yaml: invalid config\n {2}- profile: "other-name", but the file is site-io\.yaml/);
    writeFileSync(join(dir, "profiles", "site-io.yaml"), "profile: site-io\ndescription: x\npoints: []\n");
    expect(err(base("{ name: d1, profile: site-io, unitId: 1, tcp: { port: 1502 } }"), join(dir, "pod.yaml"))).toMatch(/source/);
    expect(availableProfiles([join(dir, "profiles"), ...shipped])).toContain("site-io");
  });

  it("hashes a config with the profiles it uses: an edited profile is a changed config, a config without profiles hashes as its text", () => {
    const dir = tempDir("profiles-hash");
    mkdirSync(join(dir, "profiles"));
    const demo = readFileSync("configs/demo-pod.yaml", "utf8");
    writeFileSync(join(dir, "pod.yaml"), demo);
    // the shipped rack profile, copied beside the config (the config's own profiles/ come first)
    const rack = readFileSync("profiles/podwarden-sim-rack.yaml", "utf8");
    writeFileSync(join(dir, "profiles", "podwarden-sim-rack.yaml"), rack);
    const first = loadAgentConfig(join(dir, "pod.yaml"));
    expect(first.hash).not.toBe(createHash("sha256").update(demo).digest("hex"));
    expect(loadAgentConfig(join(dir, "pod.yaml")).hash).toBe(first.hash);
    // a register's scale corrected in the profile alone: the same config text, another config
    writeFileSync(join(dir, "profiles", "podwarden-sim-rack.yaml"), `${rack}\n# corrected\n`);
    expect(loadAgentConfig(join(dir, "pod.yaml")).hash).not.toBe(first.hash);
    // without profiles, the hash is the text's, as it was before profiles
    const byHand = readFileSync("test/fixtures/demo-pod-by-hand.yaml", "utf8");
    expect(loadAgentConfig("test/fixtures/demo-pod-by-hand.yaml").hash).toBe(createHash("sha256").update(byHand).digest("hex"));
  });
});
