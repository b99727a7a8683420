// The pod as a Redfish cooling unit: every link of the served tree resolves, every resource holds
// the properties DMTF's schemas require and only their enumerations' words, the OCP CDU
// profile's mandatory resources are there, the state is the pod's real state, and the service is
// read-only, authenticated when configured, and bounded. An agent against the simulator over real
// Modbus TCP, and one `podwarden run` for the daemon's wiring.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../agent/agent.js";
import { setUser } from "../agent/hmi/users.js";
import { RedfishServer } from "../agent/redfish/server.js";
import { RedfishTree } from "../agent/redfish/tree.js";
import { agentConfig, demoConfigFor, testAgent, TEST_POD } from "./helpers/agent.js";
import { startDaemon, untilRunning } from "./helpers/daemon.js";
import { stopProcess, waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { freePort } from "../tooling/free-port.js";
import { tempDir } from "./helpers/temp-dirs.js";
import { links } from "../agent/redfish/service-documents.js";

// From DMTF's JSON schemas (DSP8010, Redfish-Publications): the properties each type requires,
// and the enumerations of the properties served
const REQUIRED: Record<string, string[]> = {
  ServiceRoot: ["Links", "@odata.id", "@odata.type", "Id", "Name"],
  Chassis: ["ChassisType", "@odata.id", "@odata.type", "Id", "Name"],
  CoolingUnit: ["EquipmentType", "@odata.id", "@odata.type", "Id", "Name"],
};
// the CDU's power meter: any point the pod reads serves to show where a configured meter's reading goes
const METER = "rack-1.powerKw";
const ENUMS: Record<string, string[]> = {
  State: ["Enabled", "Disabled", "StandbyOffline", "StandbySpare", "InTest", "Starting", "Absent", "UnavailableOffline", "Deferring", "Quiesced", "Updating", "Qualified", "Degraded"],
  Health: ["OK", "Warning", "Critical"],
  HealthRollup: ["OK", "Warning", "Critical"],
  DetectorState: ["OK", "Warning", "Critical"],
  CoolantConnectorType: ["Pair", "Supply", "Return", "Inline", "Closed"],
  PumpType: ["Liquid", "Compressor"],
  CoolingLoopType: ["FWS", "TCS", "RowTCS"],
  CoolantType: ["Water", "Hydrocarbon", "Fluorocarbon", "Dielectric"],
  LeakDetectorType: ["Moisture", "FloatSwitch"],
  ControlMode: ["Automatic", "Override", "Manual", "Disabled"],
  ChassisType: ["Rack", "Blade", "Enclosure", "StandAlone", "RackMount", "Card", "Cartridge", "Row", "Pod", "Expansion", "Sidecar", "Zone", "Sled", "Shelf", "Drawer", "Module", "Component", "IPBasedDrive", "RackGroup", "StorageEnclosure", "ImmersionTank", "HeatExchanger", "PowerStrip", "Other"],
};

type Json = Record<string, unknown>;

/** A property's requirement in a Redfish interoperability profile (DSP0272). */
interface Requirement {
  ReadRequirement?: "Mandatory" | "Recommended" | "IfImplemented" | "Conditional" | "None";
  Comparison?: string;
  Values?: unknown[];
  PropertyRequirements?: Record<string, Requirement>;
}
// What a served CDU must carry: the OCP CDU profile and its Liquid Cooling baseline, merged per
// resource (the file says where from), read as DMTF's Interop Validator reads a profile
const PROFILE = JSON.parse(readFileSync("test/fixtures/redfish/ocp-cdu-profile.json", "utf8")) as { Resources: Record<string, { PropertyRequirements?: Record<string, Requirement> }> };

/** The profile's Mandatory properties missing from `r` (a null is present: a reading not known now), or with a value it does not allow. */
function unmet(r: unknown, reqs: Record<string, Requirement>, at: string): string[] {
  const out: string[] = [];
  for (const [k, req] of Object.entries(reqs)) {
    const v = (r as Json | null)?.[k];
    if (v === undefined) {
      if ((req.ReadRequirement ?? "Mandatory") === "Mandatory") out.push(`${at}.${k}`);
      continue;
    }
    if (req.Comparison === "Equal" && req.Values !== undefined && !req.Values.includes(v)) out.push(`${at}.${k} = ${JSON.stringify(v)}`);
    if (req.PropertyRequirements !== undefined && v !== null) for (const x of Array.isArray(v) ? v : [v]) out.push(...unmet(x, req.PropertyRequirements, `${at}.${k}`));
  }
  return out;
}

/** docs/redfish.md's profile table: each property the profile asks for that is absent, with why. */
function documentedAbsent(): Set<string> {
  const rows = readFileSync("docs/redfish.md", "utf8").split("\n").map((l) => /^\| `([A-Za-z.]+)` \| absent \| (.+) \|$/.exec(l)).filter((m): m is RegExpExecArray => m !== null);
  for (const m of rows) expect(m[2].trim().length, `docs/redfish.md: why is ${m[1]} absent?`).toBeGreaterThan(20);
  return new Set(rows.map((m) => m[1]));
}


/** Enumerated values anywhere in the resource that are not DMTF's words. */
function badEnums(r: unknown, at = ""): string[] {
  const out: string[] = [];
  if (Array.isArray(r)) r.forEach((x, i) => out.push(...badEnums(x, `${at}[${i}]`)));
  else if (r !== null && typeof r === "object") {
    for (const [k, v] of Object.entries(r)) {
      if (ENUMS[k] !== undefined && v !== null && !ENUMS[k].includes(String(v))) out.push(`${at}.${k} = ${JSON.stringify(v)}`);
      else out.push(...badEnums(v, `${at}.${k}`));
    }
  }
  return out;
}

describe("the pod as a Redfish cooling unit", () => {
  let t: TestSim;
  let agent: Agent;
  let server: RedfishServer;
  let base: string;
  let dir: string;
  const get = async (path: string, init: RequestInit = {}): Promise<{ status: number; body: Json; headers: Headers }> => {
    const r = await fetch(`${base}${path}`, init);
    return { status: r.status, body: (await r.json()) as Json, headers: r.headers };
  };

  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 3000 } });
    ({ agent } = testAgent(agentConfig(demoConfigFor(t.sim))));
    await agent.start();
    server = new RedfishServer({ pod: agent, racks: agent.config.racks, cdu: { ...agent.config.cdu, ratedHeatKw: 1200, points: { ...agent.config.cdu.points, powerKw: METER } }, version: "test", nameplate: { manufacturer: "Example Cooling", model: "XC-1200", partNumber: "XC-1200-A", serialNumber: "CDU-0001", productionDate: "2026-03-01", version: "A" } }, { enabled: true, host: "127.0.0.1", port: 0, maxRequestsPerS: 10_000, maxConnections: 64, maxConnectionsPerAddress: 16 });
    base = `http://127.0.0.1:${await server.listen()}`;
    dir = tempDir("pw-redfish-");
    await waitFor(() => agent.status().racks.every((r) => r.flowLpm !== null), "every rack's flow read", 20_000);
    // and the CDU's telemetry group (1 s): its return temperature and the pumps' speed feedback
    await waitFor(() => agent.status().cdu.returnTempC !== null && agent.status().pump.pumps.every((p) => typeof p.speedPct === "number"), "the CDU's telemetry read", 20_000);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await agent?.stop({ driveSafe: false, reason: "test end" });
    await t?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves a tree whose every link resolves, each resource with DMTF's required properties and enumerations, and the OCP CDU profile's mandatory parts", async () => {
    const seen = new Map<string, Json>();
    const queue = ["/redfish/v1"];
    while (queue.length > 0) {
      const path = queue.shift()!;
      if (seen.has(path)) continue;
      const r = await get(path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get("odata-version")).toBe("4.0");
      seen.set(path, r.body);
      queue.push(...links(r.body, path));
    }
    const pod = agent.identity.pod;
    const cdu = `/redfish/v1/ThermalEquipment/CDUs/${pod}`;
    // the demo's two pumps in lead/lag duty: pump-1 leads, pump-2 is a spare awaiting its failover
    expect(seen.get(`${cdu}/Pumps/1`)?.Status).toMatchObject({ State: "Enabled" });
    expect(seen.get(`${cdu}/Pumps/2`)).toMatchObject({ Status: { State: "StandbySpare" }, SpeedControlPercent: { SetPoint: 0 } });
    for (const must of [cdu, `${cdu}/Pumps/1`, `${cdu}/PrimaryCoolantConnectors/1`, `${cdu}/SecondaryCoolantConnectors/rack-1`, `${cdu}/LeakDetection/LeakDetectors/rack-8`, `${cdu}/EnvironmentMetrics`, `/redfish/v1/ThermalEquipment/CoolingLoops/${pod}-secondary`, "/redfish/v1/SessionService/Sessions"]) expect(seen.has(must), must).toBe(true);
    for (const [path, r] of seen) {
      expect(r["@odata.id"], path).toBe(path);
      const type = String(r["@odata.type"]);
      const m = /^#([A-Za-z]+)(\.v\d+_\d+_\d+)?\.([A-Za-z]+)$/.exec(type);
      expect(m, `${path}: @odata.type ${type}`).not.toBeNull();
      const name = m![3];
      expect(m![1]).toBe(name);
      expect(r.Name, path).toEqual(expect.any(String));
      if (name.endsWith("Collection")) {
        expect(m![2], `${path}: a collection's type is unversioned`).toBeUndefined();
        expect(r["Members@odata.count"]).toBe((r.Members as unknown[]).length);
      } else {
        expect(m![2], `${path}: a resource's type is versioned`).toBeDefined();
        for (const key of REQUIRED[name] ?? ["@odata.id", "@odata.type", "Id", "Name"]) expect(r, `${path} needs ${key}`).toHaveProperty([key]);
      }
      expect(badEnums(r), path).toEqual([]);
    }
    expect((seen.get("/redfish/v1") as { Links: { Sessions: unknown } }).Links.Sessions).toBeDefined();
    expect(seen.get(cdu)?.EquipmentType).toBe("CDU");
    expect((seen.get(`${cdu}/SecondaryCoolantConnectors`)?.Members as unknown[]).length).toBe(8);

    // the OCP CDU profile: each Mandatory property of each served resource is there, or absent
    // for a reason docs/redfish.md gives; and nothing the docs call absent is served
    const missing = new Set<string>();
    for (const [path, r] of seen) {
      const type = /\.([A-Za-z]+)$/.exec(String(r["@odata.type"]))![1];
      const reqs = PROFILE.Resources[type]?.PropertyRequirements;
      // a connector's side is named: the primary (facility) side is unread, the secondary read
      const label = type === "CoolantConnector" ? `${/\/(Primary|Secondary)CoolantConnectors\//.exec(path)![1]}${type}` : type;
      if (reqs !== undefined) for (const m of unmet(r, reqs, label)) missing.add(m);
    }
    expect([...missing].sort()).toEqual([...documentedAbsent()].sort());
    // what podwarden knows is served: the nameplate given, the rated capacity, the pumps' speed feedback, the manager
    expect(seen.get(cdu)).toMatchObject({ Manufacturer: "Example Cooling", SerialNumber: "CDU-0001", CoolingCapacityWatts: 1_200_000, Links: { ManagedBy: [{ "@odata.id": "/redfish/v1/Managers/podwarden" }] } });
    const number: unknown = expect.any(Number);
    expect(seen.get(`${cdu}/Pumps/1`)).toMatchObject({ PumpSpeedPercent: { Reading: number }, Location: { PartLocation: { ServiceLabel: "pump-1" } } });
    expect(seen.get(`/redfish/v1/Chassis/${pod}`)?.UUID).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(seen.get(`/redfish/v1/Chassis/${pod}/Sensors/CDUReturnTemperature`)).toMatchObject({ ReadingType: "Temperature", ReadingUnits: "Cel", Reading: number });
    // the CDU's own draw where its meter is configured, in watts: never the IT load it cools
    const meterW = (seen.get(`${cdu}/EnvironmentMetrics`)?.PowerWatts as { Reading: number }).Reading;
    expect(meterW).toBeGreaterThan(0);
    expect(seen.get(`/redfish/v1/Chassis/${pod}/Sensors/CDUPower`)).toMatchObject({ ReadingType: "Power", ReadingUnits: "W" });
  });

  it("says the pod's real state: readings from good points only, a leak's detector Critical and its rack's connector shut off", async () => {
    const pod = agent.identity.pod;
    const cdu = `/redfish/v1/ThermalEquipment/CDUs/${pod}`;
    // the flow moves from poll to poll while the pod settles (CI once: 67.6 served, 71.5 read a
    // moment later): the served reading is the agent's at some moment between the reads around it
    const before = agent.status().racks[0].flowLpm!;
    const c1 = (await get(`${cdu}/SecondaryCoolantConnectors/rack-1`)).body as { FlowLitersPerMinute: { Reading: number }; HeatRemovedkW: { Reading: number }; ReturnTemperatureControlCelsius: { SetPoint: number } };
    const after = agent.status().racks[0].flowLpm!;
    expect(c1.FlowLitersPerMinute.Reading).toBeGreaterThanOrEqual(Math.min(before, after) - 0.5);
    expect(c1.FlowLitersPerMinute.Reading).toBeLessThanOrEqual(Math.max(before, after) + 0.5);
    expect(c1.HeatRemovedkW.Reading).toBeGreaterThan(0);
    expect(c1.ReturnTemperatureControlCelsius.SetPoint).toBe(45);
    // a device that stops answering: its readings go null, never their last value
    t.sim.inject({ device: "rack-5", offline: true });
    await waitFor(() => agent.status().racks[4].flowLpm === null, "rack-5's flow unread", 15_000);
    expect(((await get(`${cdu}/SecondaryCoolantConnectors/rack-5`)).body as { FlowLitersPerMinute: { Reading: unknown } }).FlowLitersPerMinute.Reading).toBeNull();
    t.sim.inject({ device: "rack-5", offline: false });
    // a leak
    t.sim.inject({ leak: "rack-3" });
    await waitFor(() => agent.status().racks[2].leak === "Critical", "rack-3's leak seen", 10_000);
    const det = (await get(`${cdu}/LeakDetection/LeakDetectors/rack-3`)).body;
    expect(det.DetectorState).toBe("Critical");
    expect((await get(`${cdu}/LeakDetection`)).body.Status).toMatchObject({ Health: "Critical" });
    expect(((await get(`${cdu}/SecondaryCoolantConnectors/rack-3`)).body as { Status: { State: string } }).Status.State).toBe("Disabled");
    expect(((await get(cdu)).body as { Status: { HealthRollup: string } }).Status.HealthRollup).toBe("Critical");
    t.sim.inject({ leak: "rack-3", state: "dry" });
  }, 60_000);

  it("serves DSP0266's service documents, an ETag on every resource, and 501 for a query it does not carry out", async () => {
    const pod = agent.identity.pod;
    // the OData service document: the service root's top-level resources
    const odata = await get("/redfish/v1/odata");
    expect(odata.status).toBe(200);
    expect(odata.body["@odata.context"]).toBe("/redfish/v1/$metadata");
    expect(odata.body.value).toEqual(expect.arrayContaining([{ name: "Service", kind: "Singleton", url: "/redfish/v1/" }, { name: "ThermalEquipment", kind: "Singleton", url: "/redfish/v1/ThermalEquipment" }]));
    // $metadata: a reference to the DMTF schema of every type served, by namespace
    const meta = await fetch(`${base}/redfish/v1/$metadata`);
    expect(meta.headers.get("content-type")).toMatch(/^application\/xml/);
    const xml = await meta.text();
    expect(xml).toMatch(/<EntityContainer Name="Service" Extends="ServiceRoot\.v1_20_0\.ServiceContainer"\/>/);
    for (const type of ["#CoolingUnit.v1_5_0.CoolingUnit", "#Pump.v1_2_0.Pump", "#CoolingLoop.v1_1_0.CoolingLoop", "#LeakDetectorCollection.LeakDetectorCollection"]) {
      const [schema, version] = type.slice(1).split(".");
      expect(xml).toContain(`<edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/${schema}_v1.xml">`);
      expect(xml).toContain(`<edmx:Include Namespace="${version.startsWith("v") ? `${schema}.${version}` : schema}"/>`);
    }
    // an ETag on every resource; If-None-Match with it: 304, nothing sent
    const cdu = `/redfish/v1/ThermalEquipment/CDUs/${pod}/Pumps/2`;
    const first = await fetch(`${base}${cdu}`);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^W\/"[0-9a-f]{16}"$/);
    const again = await fetch(`${base}${cdu}`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    expect((await fetch(`${base}${cdu}`, { headers: { "if-none-match": 'W/"0000000000000000"' } })).status).toBe(200);
    // the query parameters it does not carry out: 501, as ProtocolFeaturesSupported says; others are ignored
    for (const q of ["$expand=.", "$select=Name", "$filter=Id eq '1'", "$top=1", "only"]) {
      const r = await get(`/redfish/v1/ThermalEquipment?${q}`);
      expect(r.status, q).toBe(501);
      expect((r.body as { error: { code: string } }).error.code).toMatch(/\.QueryNotSupported$/);
    }
    expect((await get("/redfish/v1/ThermalEquipment?view=1")).status).toBe(200);
    expect((await get("/redfish/v1")).body.ProtocolFeaturesSupported).toMatchObject({ SelectQuery: false, ExpandQuery: { ExpandAll: false } });
    // honest semantics: the loop's one chassis link; PowerWatts the meter's (this server has one),
    // and none for a CDU whose draw nothing meters: never the IT load cooled
    expect((await get(`/redfish/v1/ThermalEquipment/CoolingLoops/${pod}-secondary`)).body.Links).toEqual({ Chassis: { "@odata.id": `/redfish/v1/Chassis/${pod}` } });
    const metered = (await get(`/redfish/v1/ThermalEquipment/CDUs/${pod}/EnvironmentMetrics`)).body.PowerWatts as { Reading: number };
    expect(metered.Reading).toBeCloseTo((agent.fieldPoints().find((x) => x.id === METER)?.value ?? NaN) * 1000, -3);
    const unmetered = new RedfishTree({ pod: agent, racks: agent.config.racks, cdu: agent.config.cdu, version: "test" });
    expect(unmetered.get(`/redfish/v1/ThermalEquipment/CDUs/${pod}/EnvironmentMetrics`)).not.toHaveProperty("PowerWatts");
  });

  it("is read-only, bounded, and with a users file asks for Basic authentication beyond the service root", async () => {
    for (const method of ["POST", "PATCH", "PUT", "DELETE"]) {
      const r = await get("/redfish/v1/ThermalEquipment", { method, body: "{}" });
      expect(r.status, method).toBe(405);
      expect(r.headers.get("allow")).toBe("GET, HEAD");
    }
    expect((await get(`/redfish/v1/${"x".repeat(600)}`)).status).toBe(414);
    expect(((await get("/redfish/v1/nothing")).body as { error: { code: string } }).error.code).toMatch(/^Base\.1\.\d+\.ResourceNotFound$/);

    const usersFile = join(dir, "users.yaml");
    await setUser(usersFile, "dcim", ["observer"], "correct horse");
    await setUser(usersFile, "ops", ["observer"], "battery staple");
    const locked = new RedfishServer({ pod: agent, racks: agent.config.racks, cdu: agent.config.cdu, version: "test" }, { enabled: true, host: "127.0.0.1", port: 0, maxRequestsPerS: 20, usersFile, maxConnections: 64, maxConnectionsPerAddress: 16 });
    const url = `http://127.0.0.1:${await locked.listen()}`;
    const basic = (user: string, pw: string): RequestInit => ({ headers: { authorization: `Basic ${Buffer.from(`${user}:${pw}`).toString("base64")}` } });
    try {
      // the service root and DSP0266's two service documents stay open
      for (const open of ["/redfish/v1", "/redfish/v1/odata", "/redfish/v1/$metadata"]) expect((await fetch(`${url}${open}`)).status, open).toBe(200);
      const no = await fetch(`${url}/redfish/v1/ThermalEquipment`);
      expect(no.status).toBe(401);
      expect(no.headers.get("www-authenticate")).toMatch(/^Basic /);
      expect((await fetch(`${url}/redfish/v1/ThermalEquipment`, basic("dcim", "correct horse"))).status).toBe(200);
      // failed logins are limited per address: after five, even a right password not yet
      // verified waits (429), while the credential verified a moment ago still reads (its cache
      // is looked at before the limiter: a poller is not locked out by someone else's failures)
      for (let i = 0; i < 5; i++) expect((await fetch(`${url}/redfish/v1/Chassis`, basic("dcim", `wrong ${i}`))).status).toBe(401);
      const waits = await fetch(`${url}/redfish/v1/Chassis`, basic("ops", "battery staple"));
      expect(waits.status).toBe(429);
      expect(waits.headers.get("retry-after")).toBe("60");
      expect((await fetch(`${url}/redfish/v1/Chassis`, basic("dcim", "correct horse"))).status).toBe(200);
      // a flood: beyond maxRequestsPerS, 503 with Retry-After, nothing looked at
      const codes = await Promise.all(Array.from({ length: 40 }, () => fetch(`${url}/redfish/v1`).then((r) => [r.status, r.headers.get("retry-after")] as const)));
      expect(codes.some(([s, after]) => s === 503 && after === "1")).toBe(true);
      expect(locked.stats().limited).toBeGreaterThan(0);
    } finally {
      await locked.close();
    }
  });

  it("is served by `podwarden run` when redfish.enabled", async () => {
    const port = await freePort();
    const file = join(dir, "agent.yaml");
    writeFileSync(
      file,
      stringify(
        demoConfigFor(t.sim, (c) => {
          c.pod = `${TEST_POD}-rf`;
          c.metrics = { port: 0 };
          c.hmi = { enabled: false };
          c.redfish = { enabled: true, port };
        }),
      ),
    );
    const d = startDaemon(file);
    try {
      await untilRunning(d);
      const r = await fetch(`http://127.0.0.1:${port}/redfish/v1/ThermalEquipment/CDUs/${TEST_POD}-rf`);
      expect(r.status).toBe(200);
      expect(((await r.json()) as Json).EquipmentType).toBe("CDU");
      expect(d.lines.some((l) => l.msg === "redfish served")).toBe(true);
    } finally {
      await stopProcess(d.child, "SIGKILL");
    }
  }, 60_000);
});
