// A rack's BMC as Redfish serves it (DMTF schemas; docs/simulator.md): what a GPU rack's
// management controller offers a rack manager, driven by the plant.
//   /redfish/v1                                   ServiceRoot (open)
//   /redfish/v1/SessionService/Sessions           POST {UserName, Password} -> X-Auth-Token; DELETE ends it
//   /redfish/v1/Chassis/{rack}                    Chassis (Rack): Sensors, Controls, ThermalSubsystem, EnvironmentMetrics
//   /redfish/v1/Chassis/{rack}/Sensors/{id}       RackPower (W), InletLiquidTemp, OutletLiquidTemp (Cel),
//                                                 LiquidFlow (L/min), Tray{n}GPUPower (W), Tray{n}GPUTemp (Cel)
//   …/ThermalSubsystem/LeakDetection/LeakDetectors/{rack}-leak   DetectorState OK / Warning (cable fault) / Critical
//   …/Controls/PowerLimit                         Control (Power, W): GET with an ETag; PATCH SetPoint with If-Match
//   /redfish/v1/EventService, …/SSE               leak-detector events as Server-Sent Events
//   …/EventService/Subscriptions                 POST an EventDestination: each event POSTed to it (redfish-bmc-events.ts)
// The power limit is the plant's rack cap (RackModel.powerCapKw): the rack's power is clipped at
// it, reached at the BMC's own ramp. While it holds a limit the BMC owns the cap (a Modbus cap
// write is ramped away at the next step); with none it leaves the cap alone, apart from lifting
// its own once when its limit is withdrawn. Faults: slow answers, 500s, 401s, a dropped event stream,
// stale readings (frozen, with their ReadingTime), and a health that lies (OK over a frozen value).
import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { RackModel } from "../plant/pod-plant.js";
import { BmcEventService } from "./redfish-bmc-events.js";

export interface BmcFaults {
  slowMs: number;
  /** every request answers 500 */
  error500: boolean;
  /** every credential is refused (401), sessions included */
  unauthorized: boolean;
  /** readings frozen where they are, ReadingTime too */
  stale: boolean;
  /** every sensor reports Status.Health Critical (a failed sensor), its Reading still there */
  unhealthy: boolean;
}

export interface BmcOptions {
  user: string;
  password: string;
  /** how fast the BMC moves the rack's applied cap to a new limit, kW/s (Infinity: at once) */
  rampKwPerS: number;
  /** trays of GPUs the rack reports (per-tray power and temperature sensors) */
  trays: number;
}

/**
 * How this BMC differs from the specification's letter, as real ones do (issue #50): the status
 * a session POST answers with (201 is the specification's; 200 and 204 are met), a ReadingTime
 * that never moves while the readings do, and the power limit's AllowableMin/AllowableMax (a
 * PATCH outside them answers 400, as a real BMC's does).
 */
export interface BmcVariant {
  sessionStatus: 200 | 201 | 204;
  readingTimeFrozen: boolean;
  allowableW: { min: number; max: number };
  /** false: no SessionService (a session POST answers 404), Basic only */
  sessionService: boolean;
  /** where the EventService serves Server-Sent Events (its ServerSentEventUri); null: it serves none */
  ssePath: string | null;
  /** the EventService takes EventDestination subscriptions (and pushes each event to them) */
  subscriptions: boolean;
}

const ROOT = "/redfish/v1";
const SUBSCRIPTIONS = `${ROOT}/EventService/Subscriptions`;
const MAX_BODY = 4096;

interface Reading {
  value: number;
  time: string;
}

export class RedfishBmc {
  readonly faults: BmcFaults = { slowMs: 0, error500: false, unauthorized: false, stale: false, unhealthy: false };
  readonly variant: BmcVariant = { sessionStatus: 201, readingTimeFrozen: false, allowableW: { min: 0, max: 1e6 }, sessionService: true, ssePath: `${ROOT}/EventService/SSE`, subscriptions: true };
  readonly eventService = new BmcEventService(SUBSCRIPTIONS);
  /** the ReadingTime every sensor shows while readingTimeFrozen */
  private readonly bootTime = new Date().toISOString();
  /** the limit last PATCHed, W (null: none) */
  limitW: number | null = null;
  /** the limit was withdrawn: the next step lifts the cap it applied */
  private lifting = false;
  patches = 0;
  private etag = 1;
  private server: Server | null = null;
  private readonly sessions = new Set<string>();
  private frozen: Map<string, Reading> | null = null;
  private lastLeak: RackModel["leak"];
  private eventId = 0;

  constructor(
    readonly name: string,
    private readonly rack: RackModel,
    private readonly o: BmcOptions,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.lastLeak = rack.leak;
  }

  /** Listens on HTTP, or HTTPS with `tls` (PEM certificate and key). */
  async listen(port: number, host: string, tls?: { cert: Buffer; key: Buffer }): Promise<number> {
    const handler = (req: IncomingMessage, res: ServerResponse): void => void this.handle(req, res);
    const server = tls === undefined ? createServer({ maxHeaderSize: 8192 }, handler) : createTlsServer({ maxHeaderSize: 8192, cert: tls.cert, key: tls.key }, handler);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    const a = server.address();
    return typeof a === "object" && a !== null ? a.port : 0;
  }

  async close(): Promise<void> {
    this.eventService.close();
    const s = this.server;
    this.server = null;
    if (s === null) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  /** Ends every open event stream, as a BMC reboot or a network blip would. */
  dropStreams(): void {
    this.eventService.dropStreams();
  }

  setStale(on: boolean): void {
    this.faults.stale = on;
    this.frozen = on ? this.readings() : null;
  }

  clearFaults(): void {
    Object.assign(this.faults, { slowMs: 0, error500: false, unauthorized: false, unhealthy: false });
    this.setStale(false);
  }

  get streamCount(): number {
    return this.eventService.streamCount;
  }

  /** One plant step: the applied cap ramps toward the limit; a leak change becomes an event. */
  step(dtS: number): void {
    if (this.limitW === null && !this.lifting) {
      // no limit of its own: the cap is whoever else's (the Modbus cap register)
    } else {
      this.applyLimit(dtS);
    }
    if (this.rack.leak !== this.lastLeak) {
      this.lastLeak = this.rack.leak;
      this.event();
    }
  }

  private applyLimit(dtS: number): void {
    this.lifting = false;
    const target = this.limitW === null ? Infinity : this.limitW / 1000;
    const cur = this.rack.powerCapKw;
    if (target === Infinity || !Number.isFinite(this.o.rampKwPerS)) this.rack.powerCapKw = target;
    else {
      // from no cap, the ramp starts at what the rack draws now
      const from = Number.isFinite(cur) ? cur : Math.max(this.rack.powerKw, target);
      const step = this.o.rampKwPerS * dtS;
      this.rack.powerCapKw = from > target ? Math.max(target, from - step) : Math.min(target, from + step);
    }
  }

  private readings(): Map<string, Reading> {
    const time = this.variant.readingTimeFrozen ? this.bootTime : this.now().toISOString();
    const r = this.rack;
    const m = new Map<string, Reading>([
      ["RackPower", { value: r.powerKw * 1000, time }],
      ["InletLiquidTemp", { value: r.inletTempC, time }],
      ["OutletLiquidTemp", { value: r.returnTempC, time }],
      ["LiquidFlow", { value: r.flowLpm, time }],
    ]);
    for (let t = 1; t <= this.o.trays; t++) {
      m.set(`Tray${t}GPUPower`, { value: (r.powerKw * 1000) / this.o.trays, time });
      // trays run a little apart: the first coolest, as the coolant reaches it first
      m.set(`Tray${t}GPUTemp`, { value: r.gpuTempC + (t - 1) * 0.8, time });
    }
    return m;
  }

  private detectorState(): "OK" | "Warning" | "Critical" {
    return this.rack.leak === "wet" ? "Critical" : this.rack.leak === "cable-fault" ? "Warning" : "OK";
  }

  private get detectorPath(): string {
    return `${ROOT}/Chassis/${this.name}/ThermalSubsystem/LeakDetection/LeakDetectors/${this.name}-leak`;
  }

  private event(): void {
    const state = this.detectorState();
    const body = {
      "@odata.type": "#Event.v1_11_0.Event",
      Id: String(++this.eventId),
      Name: "Leak detector event",
      Events: [
        {
          EventId: String(this.eventId),
          EventTimestamp: this.now().toISOString(),
          MessageId: state === "OK" ? "Environmental.1.1.LeakDetectedNormal" : state === "Critical" ? "Environmental.1.1.LeakDetectedCritical" : "Environmental.1.1.LeakDetectedWarning",
          Message: `${this.name}: leak detector ${state}`,
          MessageSeverity: state,
          OriginOfCondition: { "@odata.id": this.detectorPath },
        },
      ],
    };
    this.eventService.publish(this.eventId, body);
  }

  private authorized(req: IncomingMessage): boolean {
    if (this.faults.unauthorized) return false;
    const token = req.headers["x-auth-token"];
    if (typeof token === "string" && this.sessions.has(token)) return true;
    const h = req.headers.authorization ?? "";
    if (!h.startsWith("Basic ")) return false;
    return this.credentials(Buffer.from(h.slice(6), "base64").toString("utf8"));
  }

  private credentials(userColonPassword: string): boolean {
    const want = Buffer.from(`${this.o.user}:${this.o.password}`);
    const got = Buffer.from(userColonPassword);
    return got.length === want.length && timingSafeEqual(got, want);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.faults.slowMs > 0) await new Promise((r) => setTimeout(r, this.faults.slowMs));
    if (this.faults.error500) return send(res, 500, { error: { code: "Base.1.19.InternalError", message: "simulated BMC fault" } });
    const path = (req.url ?? "/").split("?")[0].replace(/\/$/, "");
    const method = req.method ?? "GET";
    if (path === ROOT && method === "GET") return send(res, 200, this.serviceRoot());
    if (path === `${ROOT}/SessionService/Sessions` && method === "POST") return this.variant.sessionService ? this.login(req, res) : send(res, 404, { error: { code: "Base.1.19.ResourceMissingAtURI", message: "no session service" } });
    if (!this.authorized(req)) return send(res, 401, { error: { code: "Base.1.19.NoValidSession", message: "authentication required" } }, { "www-authenticate": 'Basic realm="bmc"' });
    if (path.startsWith(`${ROOT}/SessionService/Sessions/`) && method === "DELETE") {
      this.sessions.delete(path.slice(`${ROOT}/SessionService/Sessions/`.length));
      res.writeHead(204).end();
      return;
    }
    if (path === this.variant.ssePath && method === "GET") return this.eventService.stream(res);
    if (this.variant.subscriptions && path.startsWith(SUBSCRIPTIONS)) return this.subscriptionRequest(req, res, path, method);
    if (path === `${ROOT}/Chassis/${this.name}/Controls/PowerLimit` && method === "PATCH") return this.patchLimit(req, res);
    if (method !== "GET") return send(res, 405, { error: { code: "Base.1.19.OperationNotAllowed", message: `${method} not allowed here` } }, { allow: "GET" });
    const r = this.resource(path);
    if (r === null) return send(res, 404, { error: { code: "Base.1.19.ResourceNotFound", message: path } });
    send(res, 200, r, path.endsWith("/Controls/PowerLimit") ? { etag: `"${this.etag}"` } : {});
  }

  private async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    const ok = !this.faults.unauthorized && typeof body?.UserName === "string" && typeof body.Password === "string" && this.credentials(`${body.UserName}:${body.Password}`);
    if (!ok) return send(res, 401, { error: { code: "Base.1.19.NoValidSession", message: "bad credentials" } });
    const token = randomBytes(16).toString("hex");
    this.sessions.add(token);
    const headers = { "x-auth-token": token, location: `${ROOT}/SessionService/Sessions/${token}` };
    if (this.variant.sessionStatus === 204) {
      res.writeHead(204, { "odata-version": "4.0", ...headers });
      res.end();
      return;
    }
    send(res, this.variant.sessionStatus, { "@odata.id": `${ROOT}/SessionService/Sessions/${token}`, "@odata.type": "#Session.v1_7_0.Session", Id: token, Name: "Session", UserName: body.UserName }, headers);
  }

  private async subscriptionRequest(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
    const ev = this.eventService;
    if (path === SUBSCRIPTIONS && method === "POST") {
      const made = ev.subscribe(await readJson(req));
      if (typeof made === "string") return send(res, 400, { error: { code: "Base.1.19.PropertyValueFormatError", message: made } });
      return send(res, 201, ev.resource(made.id, ev.uriOf(made)), { location: ev.uriOf(made) });
    }
    if (path === SUBSCRIPTIONS && method === "GET") {
      const members = [...ev.subscriptions.values()].map((x) => link(ev.uriOf(x)));
      return send(res, 200, { "@odata.id": path, "@odata.type": "#EventDestinationCollection.EventDestinationCollection", Name: "Subscriptions", Members: members, "Members@odata.count": members.length });
    }
    const id = path.slice(SUBSCRIPTIONS.length + 1);
    const r = ev.resource(id, path);
    if (r === null) return send(res, 404, { error: { code: "Base.1.19.ResourceNotFound", message: path } });
    if (method === "DELETE") {
      ev.subscriptions.delete(id);
      res.writeHead(204).end();
      return;
    }
    if (method !== "GET") return send(res, 405, { error: { code: "Base.1.19.OperationNotAllowed", message: `${method} not allowed here` } }, { allow: "GET, DELETE" });
    send(res, 200, r);
  }

  private async patchLimit(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const match = req.headers["if-match"];
    if (match === undefined) return send(res, 428, { error: { code: "Base.1.19.PreconditionRequired", message: "If-Match needed" } });
    if (match !== `"${this.etag}"` && match !== "*") return send(res, 412, { error: { code: "Base.1.19.PreconditionFailed", message: "the ETag has changed" } });
    const body = await readJson(req);
    const sp = body?.SetPoint;
    if (!(sp === null || (typeof sp === "number" && Number.isFinite(sp)))) return send(res, 400, { error: { code: "Base.1.19.PropertyValueFormatError", message: "SetPoint: watts, or null for none" } });
    const { min, max } = this.variant.allowableW;
    if (sp !== null && (sp < min || sp > max)) return send(res, 400, { error: { code: "Base.1.19.PropertyValueOutOfRange", message: `SetPoint ${sp} is outside ${min}..${max}` } });
    // a limit withdrawn lifts the cap it applied, once
    if (sp === null && this.limitW !== null) this.lifting = true;
    this.limitW = sp;
    this.etag++;
    this.patches++;
    send(res, 200, this.resource(`${ROOT}/Chassis/${this.name}/Controls/PowerLimit`), { etag: `"${this.etag}"` });
  }

  private serviceRoot(): Record<string, unknown> {
    return { "@odata.id": ROOT, "@odata.type": "#ServiceRoot.v1_20_0.ServiceRoot", Id: "RootService", Name: `${this.name} BMC (simulated)`, RedfishVersion: "1.21.0", Chassis: link(`${ROOT}/Chassis`), SessionService: link(`${ROOT}/SessionService`), EventService: link(`${ROOT}/EventService`), Links: { Sessions: link(`${ROOT}/SessionService/Sessions`) } };
  }

  private resource(path: string): Record<string, unknown> | null {
    const ch = `${ROOT}/Chassis/${this.name}`;
    const sensors = this.frozen ?? this.readings();
    const head = (type: string, id: string, name: string): Record<string, unknown> => ({ "@odata.id": path, "@odata.type": `#${type}`, Id: id, Name: name });
    const coll = (type: string, members: string[]): Record<string, unknown> => ({ "@odata.id": path, "@odata.type": `#${type}.${type}`, Name: type, Members: members.map(link), "Members@odata.count": members.length });
    switch (path) {
      case `${ROOT}/SessionService`:
        return { ...head("SessionService.v1_2_0.SessionService", "SessionService", "Session Service"), ServiceEnabled: true, SessionTimeout: 1800, Sessions: link(`${ROOT}/SessionService/Sessions`) };
      case `${ROOT}/SessionService/Sessions`:
        return coll("SessionCollection", [...this.sessions].map((t) => `${path}/${t}`));
      case `${ROOT}/EventService`:
        return { ...head("EventService.v1_10_0.EventService", "EventService", "Event Service"), ServiceEnabled: true, ...(this.variant.ssePath === null ? {} : { ServerSentEventUri: this.variant.ssePath }), ...(this.variant.subscriptions ? { Subscriptions: link(SUBSCRIPTIONS) } : {}), Status: { State: "Enabled", Health: "OK" } };
      case `${ROOT}/Chassis`:
        return coll("ChassisCollection", [ch]);
      case ch:
        return { ...head("Chassis.v1_28_0.Chassis", this.name, `${this.name} (simulated BMC)`), ChassisType: "Rack", PowerState: this.rack.powerOff ? "Off" : "On", Status: { State: "Enabled", Health: "OK" }, Sensors: link(`${ch}/Sensors`), Controls: link(`${ch}/Controls`), ThermalSubsystem: link(`${ch}/ThermalSubsystem`) };
      case `${ch}/Sensors`:
        return coll("SensorCollection", [...sensors.keys()].map((k) => `${path}/${k}`));
      case `${ch}/Controls`:
        return coll("ControlCollection", [`${path}/PowerLimit`]);
      case `${ch}/Controls/PowerLimit`:
        return {
          ...head("Control.v1_6_0.Control", "PowerLimit", `${this.name} power limit`),
          "@odata.etag": `"${this.etag}"`,
          ControlType: "Power",
          ControlMode: this.limitW === null ? "Disabled" : "Automatic",
          SetPoint: this.limitW,
          SetPointUnits: "W",
          AllowableMin: this.variant.allowableW.min,
          AllowableMax: this.variant.allowableW.max,
          Sensor: { Reading: Math.round(this.rack.powerKw * 1000), DataSourceUri: `${ch}/Sensors/RackPower` },
          Status: { State: "Enabled", Health: "OK" },
        };
      case `${ch}/ThermalSubsystem`:
        return { ...head("ThermalSubsystem.v1_3_0.ThermalSubsystem", "ThermalSubsystem", "Thermal Subsystem"), LeakDetection: link(`${path}/LeakDetection`), Status: { State: "Enabled", Health: "OK" } };
      case `${ch}/ThermalSubsystem/LeakDetection`:
        return { ...head("LeakDetection.v1_2_0.LeakDetection", "LeakDetection", "Leak Detection"), LeakDetectors: link(`${path}/LeakDetectors`), Status: { State: "Enabled", Health: this.detectorState() } };
      case `${ch}/ThermalSubsystem/LeakDetection/LeakDetectors`:
        return coll("LeakDetectorCollection", [this.detectorPath]);
      case this.detectorPath: {
        const state = this.detectorState();
        return { ...head("LeakDetector.v1_6_0.LeakDetector", `${this.name}-leak`, `${this.name} cold-plate leak rope`), LeakDetectorType: "Moisture", DetectorState: state, Status: { State: "Enabled", Health: state } };
      }
    }
    if (path.startsWith(`${ROOT}/SessionService/Sessions/`)) {
      const token = path.slice(`${ROOT}/SessionService/Sessions/`.length);
      return this.sessions.has(token) ? { ...head("Session.v1_7_0.Session", token, "Session"), UserName: this.o.user } : null;
    }
    if (path.startsWith(`${ch}/Sensors/`)) {
      const id = path.slice(`${ch}/Sensors/`.length);
      const s = sensors.get(id);
      if (s === undefined) return null;
      const [type, units] = id.endsWith("Power") ? ["Power", "W"] : id.endsWith("Temp") ? ["Temperature", "Cel"] : ["LiquidFlowLPM", "L/min"];
      return { ...head("Sensor.v1_12_0.Sensor", id, id), ReadingType: type, ReadingUnits: units, Reading: Math.round(s.value * 1000) / 1000, ReadingTime: s.time, Status: { State: "Enabled", Health: this.faults.unhealthy ? "Critical" : "OK" } };
    }
    return null;
  }
}

const link = (path: string): { "@odata.id": string } => ({ "@odata.id": path });

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { "odata-version": "4.0", ...headers, "content-type": "application/json;charset=utf-8", "content-length": text.length });
  res.end(text);
}

/** A JSON object body of at most MAX_BODY bytes, or null. */
async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | null> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return null;
    parts.push(chunk as Buffer);
  }
  try {
    const v: unknown = JSON.parse(Buffer.concat(parts).toString("utf8"));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
