// The simulator's Redfish BMCs (devices.redfish), over real HTTP: readings from the plant, the
// power limit applied to the plant through an ETag-guarded PATCH, leak events on the SSE stream,
// and the faults a rack manager must survive (slow, 500, 401, a dropped stream, stale readings).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";

type Json = Record<string, unknown>;
const BASIC = { authorization: `Basic ${Buffer.from("admin:podwarden-sim").toString("base64")}` };

describe("the simulator's Redfish BMC per rack", () => {
  let t: TestSim;
  let base: string;
  const ch = "/redfish/v1/Chassis/rack-2";
  const get = async (path: string, headers: Record<string, string> = BASIC): Promise<{ status: number; body: Json; headers: Headers }> => {
    const r = await fetch(`${base}${path}`, { headers });
    return { status: r.status, body: (await r.json()) as Json, headers: r.headers };
  };

  beforeAll(async () => {
    t = await startTestSim({ devices: { redfish: { limitRampKwPerS: 1000 } } });
    base = `http://127.0.0.1:${t.port("rack-2.bmc")}`;
  });
  afterAll(async () => {
    await t?.stop();
  });

  it("serves its sensors from the plant, behind a session or Basic credentials, every link resolving", async () => {
    expect((await get("/redfish/v1", {})).status).toBe(200); // the service root is open
    expect((await get(ch, {})).status).toBe(401);
    const login = await fetch(`${base}/redfish/v1/SessionService/Sessions`, { method: "POST", body: JSON.stringify({ UserName: "admin", Password: "podwarden-sim" }) });
    expect(login.status).toBe(201);
    const token = login.headers.get("x-auth-token")!;
    expect((await get(ch, { "x-auth-token": token })).status).toBe(200);
    expect((await fetch(`${base}/redfish/v1/SessionService/Sessions`, { method: "POST", body: JSON.stringify({ UserName: "admin", Password: "no" }) })).status).toBe(401);
    const seen = new Set<string>();
    const queue = ["/redfish/v1"];
    while (queue.length > 0) {
      const p = queue.shift()!;
      if (seen.has(p) || p.endsWith("/SSE")) continue;
      seen.add(p);
      const r = await get(p);
      expect(r.status, p).toBe(200);
      JSON.stringify(r.body).replace(/"@odata\.id":"([^"]+)"/g, (_, id: string) => (queue.push(id), ""));
    }
    expect(seen.has(`${ch}/Sensors/Tray4GPUTemp`)).toBe(true);
    const truth = t.sim.truth().racks[1];
    const power = (await get(`${ch}/Sensors/RackPower`)).body;
    expect(power).toMatchObject({ ReadingType: "Power", ReadingUnits: "W", Status: { Health: "OK" } });
    expect(power.Reading as number).toBeCloseTo(truth.powerKw * 1000, -3);
    expect((await get(`${ch}/Sensors/LiquidFlow`)).body.Reading as number).toBeCloseTo(truth.flowLpm, -1);
  });

  it("applies a power limit PATCHed with its ETag to the plant: the rack's power falls under it", async () => {
    const path = `${ch}/Controls/PowerLimit`;
    const first = await get(path);
    expect(first.body).toMatchObject({ ControlType: "Power", SetPointUnits: "W", SetPoint: null });
    const etag = first.headers.get("etag")!;
    const patch = (headers: Record<string, string>, body: unknown): Promise<Response> => fetch(`${base}${path}`, { method: "PATCH", headers: { ...BASIC, ...headers }, body: JSON.stringify(body) });
    expect((await patch({}, { SetPoint: 10_000 })).status).toBe(428); // no If-Match
    expect((await patch({ "if-match": '"999"' }, { SetPoint: 10_000 })).status).toBe(412);
    expect((await patch({ "if-match": etag }, { SetPoint: "ten" })).status).toBe(400);
    const ok = await patch({ "if-match": etag }, { SetPoint: 10_000 });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("etag")).not.toBe(etag);
    expect(((await ok.json()) as Json).SetPoint).toBe(10_000);
    await waitFor(() => t.sim.truth().racks[1].powerKw <= 10.001, "rack-2's power under its limit", 10_000);
    // null lifts the limit
    expect((await patch({ "if-match": ok.headers.get("etag")! }, { SetPoint: null })).status).toBe(200);
    await waitFor(() => t.sim.truth().racks[1].powerKw > 10.5, "rack-2's power back above the old limit", 10_000);
    // with no limit of its own the BMC leaves the cap to the Modbus cap register
    t.sim.plant.racks[1].powerCapKw = 12;
    await new Promise((r) => setTimeout(r, 300));
    expect(t.sim.plant.racks[1].powerCapKw).toBe(12);
    t.sim.plant.racks[1].powerCapKw = Infinity;
  });

  it("sends a leak detector's change on its SSE stream, and a dropped stream ends", async () => {
    const ac = new AbortController();
    const r = await fetch(`${base}/redfish/v1/EventService/SSE`, { headers: BASIC, signal: ac.signal });
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    const reader = r.body!.getReader();
    let text = "";
    const until = async (re: RegExp): Promise<void> => {
      while (!re.test(text)) {
        const chunk = (await reader.read()) as { done: boolean; value?: Uint8Array };
        if (chunk.done || chunk.value === undefined) return;
        text += Buffer.from(chunk.value).toString();
      }
    };
    t.sim.inject({ leak: "rack-2" });
    await until(/LeakDetectedCritical/);
    expect(text).toContain("/LeakDetectors/rack-2-leak");
    expect((await get(`${ch}/ThermalSubsystem/LeakDetection/LeakDetectors/rack-2-leak`)).body.DetectorState).toBe("Critical");
    t.sim.inject({ bmc: "rack-2", dropStream: true });
    const end = await reader.read().catch(() => ({ done: true }));
    expect(end.done).toBe(true);
    ac.abort();
    t.sim.inject({ leak: "rack-2", state: "dry" });
  });

  it("fails as a real BMC fails: 500s, refused credentials, slow answers, and stale readings under an OK health", async () => {
    t.sim.inject({ bmc: "rack-2", error500: true });
    expect((await get(ch)).status).toBe(500);
    t.sim.inject({ bmc: "rack-2", error500: false, unauthorized: true });
    expect((await get(ch)).status).toBe(401);
    t.sim.inject({ bmc: "rack-2", unauthorized: false, slowMs: 300 });
    expect((await get(ch)).status).toBe(200); // late, not lost
    t.sim.inject({ bmc: "rack-2", slowMs: 0, stale: true });
    const a = (await get(`${ch}/Sensors/InletLiquidTemp`)).body;
    await new Promise((r) => setTimeout(r, 300));
    const b = (await get(`${ch}/Sensors/InletLiquidTemp`)).body;
    expect(b.ReadingTime).toBe(a.ReadingTime);
    expect(b.Reading).toBe(a.Reading);
    expect(b.Status).toEqual({ State: "Enabled", Health: "OK" }); // the lie a client must see through
    t.sim.inject({ clear: "all" });
    await new Promise((r) => setTimeout(r, 50));
    expect((await get(`${ch}/Sensors/InletLiquidTemp`)).body.ReadingTime).not.toBe(a.ReadingTime);
  });
});
