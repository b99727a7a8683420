// The pod as Redfish resources (DMTF ThermalEquipment, CoolingUnit, CoolantConnector, Pump,
// LeakDetection, LeakDetector, EnvironmentMetrics, CoolingLoop; the OCP CDU profile's mandatory
// parts): one resource computed per request from the pod's state, never a stored tree. Property
// names and enumerations are DMTF's (docs/redfish.md lists the served tree with an example of
// each). Readings are null unless the point behind them is good, as everywhere in podwarden.
import { measuredValue, type Point } from "../../lib/points.js";
import type { CduConfig, RackConfig } from "../../pod/config.js";
import { COOLANT_KJ_PER_L_K } from "../../pod/coolant.js";
import { loopModeWord } from "../../pod/status-words.js";
import type { PodReader, PodStatus } from "../pod-api.js";
import { located, nameplate, podSensors, podUuid, type Resource } from "./equipment.js";
import type { RedfishConfig } from "./schema.js";

export const ROOT = "/redfish/v1";

export interface RedfishSource {
  pod: Pick<PodReader, "identity" | "status" | "fieldPoints">;
  racks: readonly Pick<RackConfig, "name" | "points" | "maxFlowLpm">[];
  cdu: Pick<CduConfig, "points" | "ratedHeatKw">;
  version: string;
  /** the CDU's nameplate (redfish.nameplate) */
  nameplate?: RedfishConfig["nameplate"];
}

type Health = "OK" | "Warning" | "Critical";
/** podwarden, as the pod's rack manager: the manager of the CDU and the pod's chassis (the OCP profile's Links.ManagedBy) */
const MANAGER = `${ROOT}/Managers/podwarden`;

const link = (path: string): { "@odata.id": string } => ({ "@odata.id": path });
const sensor = (reading: number | null): { Reading: number | null } => ({ Reading: reading === null ? null : Math.round(reading * 1000) / 1000 });
const scaled = (x: number | null, k = 1): number | null => (x === null ? null : x * k);
const worst = (hs: readonly (Health | null)[]): Health => (hs.includes("Critical") ? "Critical" : hs.includes("Warning") ? "Warning" : "OK");

// PG25, as the plant model and the heat-balance check take it (pod/coolant.ts): a glycol mixture
// is CoolantType Water in DMTF's words
const COOLANT = { CoolantType: "Water", AdditiveName: "Propylene glycol", AdditivePercent: 25, SpecificHeatkJoulesPerKgK: 3.95, DensityKgPerCubicMeter: 1030 };

/** The pod's mode as a Redfish Status: Starting while it starts; Running OK, Degraded Warning, Failsafe Critical. */
function podStatus(s: PodStatus, rollup: Health): Resource {
  const health: Health = s.mode === "Failsafe" ? "Critical" : s.mode === "Degraded" ? "Warning" : "OK";
  return { State: s.mode === "Starting" ? "Starting" : "Enabled", Health: health, HealthRollup: worst([health, rollup]) };
}

/** A loop's mode as a Redfish ControlMode: what holds it, a safety interlock counting as an Override of the loop. */
function controlMode(loopStatus: number): string | null {
  const w = loopModeWord(loopStatus);
  return w === "Auto" ? "Automatic" : w === "Manual" ? "Manual" : w === "-" ? null : "Override";
}

export class RedfishTree {
  private readonly cduId: string;

  constructor(private readonly src: RedfishSource) {
    this.cduId = src.pod.identity.pod;
  }

  private get cdu(): string {
    return `${ROOT}/ThermalEquipment/CDUs/${this.cduId}`;
  }

  private get loop(): string {
    return `${ROOT}/ThermalEquipment/CoolingLoops/${this.cduId}-secondary`;
  }

  /** The resource at `path` (no trailing slash), or null where there is none. */
  get(path: string): Resource | null {
    const p = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
    if (p === "/redfish") return { v1: `${ROOT}/` };
    if (!p.startsWith(ROOT)) return null;
    const status = this.src.pod.status();
    const points = new Map<string, Point>();
    for (const x of this.src.pod.fieldPoints()) points.set(x.id, x);
    const at = (id: string | undefined): number | null => (id === undefined ? null : measuredValue(points.get(id)));
    const racks = this.src.racks;
    const leakHealth = status.racks.map((r) => r.leak);
    const cduPrefix = `${this.cdu}/`;
    switch (p) {
      case ROOT:
        return this.serviceRoot();
      case `${ROOT}/SessionService`:
        return { ...this.head(p, "SessionService.v1_2_0.SessionService", "SessionService", "Session Service"), ServiceEnabled: false, SessionTimeout: 30, Sessions: link(`${p}/Sessions`), Description: "no sessions: this read-only service takes HTTP Basic authentication (docs/redfish.md)" };
      case `${ROOT}/SessionService/Sessions`:
        return this.collection(p, "SessionCollection", "Sessions", []);
      case `${ROOT}/Chassis`:
        return this.collection(p, "ChassisCollection", "Chassis", [`${p}/${this.cduId}`]);
      case `${ROOT}/Chassis/${this.cduId}`:
        return {
          ...this.head(p, "Chassis.v1_28_0.Chassis", this.cduId, `Pod ${this.src.pod.identity.site}/${this.cduId}: ${racks.length} racks on one secondary loop`),
          ChassisType: "RackGroup",
          UUID: podUuid(this.src.pod.identity.site, this.cduId),
          Status: podStatus(status, worst(leakHealth)),
          Sensors: link(`${p}/Sensors`),
          Links: { CoolingUnits: [link(this.cdu)], ManagedBy: [link(MANAGER)] },
        };
      case `${ROOT}/Chassis/${this.cduId}/Sensors`:
        return this.collection(p, "SensorCollection", "The CDU's sensors", podSensors(this.src.cdu.points).map((x) => `${p}/${x.id}`));
      case `${ROOT}/Managers`:
        return this.collection(p, "ManagerCollection", "Managers", [MANAGER]);
      case MANAGER:
        return {
          ...this.head(p, "Manager.v1_17_0.Manager", "podwarden", `podwarden, the rack manager of pod ${this.cduId}`),
          ManagerType: "RackManager",
          FirmwareVersion: this.src.version,
          Status: { State: "Enabled", Health: "OK" },
          Links: { ManagerForChassis: [link(`${ROOT}/Chassis/${this.cduId}`)] },
        };
      case `${ROOT}/ThermalEquipment`:
        return { ...this.head(p, "ThermalEquipment.v1_2_0.ThermalEquipment", "ThermalEquipment", "Thermal Equipment"), Status: podStatus(status, worst(leakHealth)), CDUs: link(`${p}/CDUs`), CoolingLoops: link(`${p}/CoolingLoops`) };
      case `${ROOT}/ThermalEquipment/CDUs`:
        return this.collection(p, "CoolingUnitCollection", "Cooling Distribution Units", [this.cdu]);
      case `${ROOT}/ThermalEquipment/CoolingLoops`:
        return this.collection(p, "CoolingLoopCollection", "Cooling Loops", [this.loop]);
      case this.loop:
        return {
          ...this.head(p, "CoolingLoop.v1_1_0.CoolingLoop", `${this.cduId}-secondary`, `Secondary loop (TCS) of pod ${this.cduId}`),
          CoolingLoopType: "TCS",
          Coolant: COOLANT,
          SupplyEquipmentNames: [this.cduId],
          ConsumingEquipmentNames: racks.map((r) => r.name),
          Status: podStatus(status, worst(leakHealth)),
          // one link: CoolingLoop's Links.Chassis is a single reference (DMTF's validator failed the array)
          Links: { Chassis: link(`${ROOT}/Chassis/${this.cduId}`) },
        };
      case this.cdu:
        return {
          ...this.head(p, "CoolingUnit.v1_5_0.CoolingUnit", this.cduId, `CDU of pod ${this.cduId}`),
          EquipmentType: "CDU",
          FirmwareVersion: `podwarden ${this.src.version}`,
          ...nameplate(this.src.nameplate),
          ...(this.src.cdu.ratedHeatKw === undefined ? {} : { CoolingCapacityWatts: Math.round(this.src.cdu.ratedHeatKw * 1000) }),
          Status: podStatus(status, worst(leakHealth)),
          Coolant: COOLANT,
          PrimaryCoolantConnectors: link(`${p}/PrimaryCoolantConnectors`),
          SecondaryCoolantConnectors: link(`${p}/SecondaryCoolantConnectors`),
          Pumps: link(`${p}/Pumps`),
          LeakDetection: link(`${p}/LeakDetection`),
          EnvironmentMetrics: link(`${p}/EnvironmentMetrics`),
          Links: { Chassis: [link(`${ROOT}/Chassis/${this.cduId}`)], ManagedBy: [link(MANAGER)] },
        };
    }
    const sensorAt = p.startsWith(`${ROOT}/Chassis/${this.cduId}/Sensors/`) ? podSensors(this.src.cdu.points).find((x) => p.endsWith(`/Sensors/${x.id}`)) : undefined;
    if (sensorAt !== undefined) {
      return { ...this.head(p, "Sensor.v1_7_0.Sensor", sensorAt.id, sensorAt.name), ReadingType: sensorAt.readingType, ReadingUnits: sensorAt.units, ...sensor(scaled(at(sensorAt.point), sensorAt.scale)), Status: { State: "Enabled", Health: at(sensorAt.point) === null ? "Warning" : "OK" }, Description: `podwarden's point ${sensorAt.point}` };
    }
    if (!p.startsWith(cduPrefix)) return null;
    const sub = p.slice(cduPrefix.length);
    switch (sub) {
      case "PrimaryCoolantConnectors":
        return this.collection(p, "CoolantConnectorCollection", "Primary (facility) coolant connectors", [`${p}/1`]);
      case "PrimaryCoolantConnectors/1":
        // podwarden reads no primary-side sensor: the connector exists, its readings are unknown
        return { ...this.head(p, "CoolantConnector.v1_3_0.CoolantConnector", "1", "Primary side (facility water)"), CoolantConnectorType: "Pair", Status: { State: "Enabled", Health: null }, Description: "no primary-side sensors are read by podwarden" };
      case "SecondaryCoolantConnectors":
        return this.collection(p, "CoolantConnectorCollection", "Secondary coolant connectors, one per rack", racks.map((r) => `${p}/${r.name}`));
      case "Pumps":
        return this.collection(p, "PumpCollection", "Pumps", status.pump.pumps.map((_, i) => `${p}/${i + 1}`));
    }
    const pumpAt = /^Pumps\/([1-9])$/.exec(sub);
    const unit = pumpAt === null ? undefined : status.pump.pumps[Number(pumpAt[1]) - 1];
    if (pumpAt !== null && unit !== undefined) {
      // with redundant pumps (cdu.pumps) a standby is a spare awaiting its failover
      const pump = status.pump;
      const standby = unit.role === "standby";
      const health: Health = loopModeWord(pump.loopStatus) === "FAILSAFE" || !pump.enabled || unit.fault === 1 ? "Critical" : pump.dpKpa === null ? "Warning" : "OK";
      return {
        ...this.head(p, "Pump.v1_2_0.Pump", pumpAt[1], pump.pumps.length > 1 ? `Secondary loop pump ${unit.name} (${unit.role})` : "Secondary loop pump"),
        PumpType: "Liquid",
        ...located(unit.name),
        ...(unit.speedPct === undefined ? {} : { PumpSpeedPercent: sensor(unit.speedPct) }),
        Status: { State: !pump.enabled ? "Disabled" : standby ? "StandbySpare" : "Enabled", Health: health },
        SpeedControlPercent: { SetPoint: standby ? 0 : pump.speedCmdPct, ControlMode: controlMode(pump.loopStatus) },
      };
    }
    switch (sub) {
      case "LeakDetection":
        return {
          ...this.head(p, "LeakDetection.v1_2_0.LeakDetection", "LeakDetection", "Leak detection, one detector per rack"),
          Status: { State: "Enabled", Health: worst(leakHealth) },
          LeakDetectors: link(`${p}/LeakDetectors`),
          // one group per rack (its detector over all its leak inputs); no HumidityPercent: no humidity sensor is read
          LeakDetectorGroups: racks.map((r, i) => ({ GroupName: r.name, Detectors: [{ DataSourceUri: `${p}/LeakDetectors/${r.name}`, DetectorState: status.racks[i].leak }] })),
        };
      case "LeakDetection/LeakDetectors":
        return this.collection(p, "LeakDetectorCollection", "Leak detectors", racks.map((r) => `${p}/${r.name}`));
      case "EnvironmentMetrics":
        return {
          ...this.head(p, "EnvironmentMetrics.v1_5_0.EnvironmentMetrics", "EnvironmentMetrics", `Environment metrics of CDU ${this.cduId}`),
          ...(this.src.cdu.points.supplyTempC === undefined ? {} : { TemperatureCelsius: sensor(at(this.src.cdu.points.supplyTempC)) }),
          // PowerWatts is the CDU's own electrical draw, from its meter where one is configured
          // (it once carried the IT load cooled, which a DCIM tool reads as the CDU's draw); the
          // heat each rack gives the loop is its secondary connector's HeatRemovedkW
          ...(this.src.cdu.points.powerKw === undefined ? {} : { PowerWatts: sensor(scaled(at(this.src.cdu.points.powerKw), 1000)) }),
          Description: `TemperatureCelsius: the CDU's supply temperature. ${this.src.cdu.points.powerKw === undefined ? "The CDU's own power is not metered" : "PowerWatts: the CDU's own electrical draw, from its meter"}; the heat removed is each secondary connector's HeatRemovedkW`,
        };
    }
    const rackAt = (prefix: string): number => (sub.startsWith(prefix) ? racks.findIndex((r) => r.name === sub.slice(prefix.length)) : -1);
    const c = rackAt("SecondaryCoolantConnectors/");
    if (c >= 0) return this.connector(p, racks[c], status.racks[c], at);
    const d = rackAt("LeakDetection/LeakDetectors/");
    if (d >= 0) {
      const leak = status.racks[d].leak;
      return {
        ...this.head(p, "LeakDetector.v1_6_0.LeakDetector", racks[d].name, `${racks[d].name} leak detection`),
        LeakDetectorType: "Moisture",
        DetectorState: leak,
        ...located(racks[d].name),
        Status: { State: "Enabled", Health: leak },
        Description: `the ${racks[d].points.leak.length} leak input(s) of ${racks[d].name}: Critical when wet or latched, Warning on a sensor fault`,
      };
    }
    return null;
  }

  private connector(path: string, rack: Pick<RackConfig, "name" | "points" | "maxFlowLpm">, r: PodStatus["racks"][number], at: (id: string | undefined) => number | null): Resource {
    const dT = r.supplyTempC === null || r.returnTempC === null ? null : r.returnTempC - r.supplyTempC;
    const heat = dT === null || r.flowLpm === null ? null : (r.flowLpm * COOLANT_KJ_PER_L_K * dT) / 60;
    const mode = controlMode(r.loopStatus);
    return {
      ...this.head(path, "CoolantConnector.v1_3_0.CoolantConnector", rack.name, `${rack.name} supply and return`),
      CoolantConnectorType: "Pair",
      CoolingLoopName: `${this.cduId}-secondary`,
      // its flow with the valve fully open at the design differential pressure (racks[].maxFlowLpm)
      ...(rack.maxFlowLpm === undefined ? {} : { RatedFlowLitersPerMinute: rack.maxFlowLpm }),
      Coolant: COOLANT,
      // an isolated rack's connector is shut off from the loop
      Status: { State: r.isolation === "Normal" && !r.isolatedByOperator ? "Enabled" : "Disabled", Health: r.leak },
      FlowLitersPerMinute: sensor(r.flowLpm),
      SupplyTemperatureCelsius: sensor(r.supplyTempC),
      ReturnTemperatureCelsius: sensor(r.returnTempC),
      DeltaTemperatureCelsius: sensor(dT),
      HeatRemovedkW: sensor(heat),
      ...(rack.points.valvePositionPct === undefined ? {} : { ValvePositionPercent: sensor(at(rack.points.valvePositionPct)) }),
      ValvePositionControlPercent: { SetPoint: r.valvePct, ControlMode: mode },
      ReturnTemperatureControlCelsius: { SetPoint: r.setpointC, ControlMode: mode },
      Links: { ConnectedCoolingLoop: link(this.loop), ConnectedCoolingUnit: link(this.cdu) },
    };
  }

  private serviceRoot(): Resource {
    const id = this.src.pod.identity;
    return {
      ...this.head(ROOT, "ServiceRoot.v1_20_0.ServiceRoot", "RootService", `podwarden ${id.site}/${id.pod}`),
      RedfishVersion: "1.21.0",
      Product: "podwarden",
      Vendor: "podwarden",
      ThermalEquipment: link(`${ROOT}/ThermalEquipment`),
      Chassis: link(`${ROOT}/Chassis`),
      Managers: link(`${ROOT}/Managers`),
      SessionService: link(`${ROOT}/SessionService`),
      Links: { Sessions: link(`${ROOT}/SessionService/Sessions`) },
      // read-only, and no query is carried out: each is answered 501 (server.ts)
      ProtocolFeaturesSupported: {
        ExpandQuery: { ExpandAll: false, Levels: false, Links: false, NoLinks: false },
        SelectQuery: false,
        FilterQuery: false,
        OnlyMemberQuery: false,
        ExcerptQuery: false,
        TopSkipQuery: false,
      },
    };
  }

  private head(path: string, type: string, id: string, name: string): Resource {
    return { "@odata.id": path, "@odata.type": `#${type}`, Id: id, Name: name };
  }

  private collection(path: string, type: string, name: string, members: string[]): Resource {
    return { "@odata.id": path, "@odata.type": `#${type}.${type}`, Name: name, Members: members.map(link), "Members@odata.count": members.length };
  }
}
