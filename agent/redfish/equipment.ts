// The parts of the OCP Coolant Distribution Unit profile (and its Liquid Cooling baseline) that
// are not the loop's readings: the CDU's nameplate from config, podwarden as the pod's manager,
// the pod's own sensors, the parts' service labels and the chassis's UUID. Each property is
// served only where podwarden knows it to be true; docs/redfish.md says, per property, why the
// others are absent.
import { createHash } from "node:crypto";
import type { CduConfig } from "../../pod/config.js";
import type { RedfishConfig } from "./schema.js";

export type Resource = Record<string, unknown>;

/** The nameplate keys as Redfish names them, each only where the config gives it. */
export function nameplate(n: RedfishConfig["nameplate"]): Resource {
  if (n === undefined) return {};
  const pairs: [string, string | undefined][] = [
    ["Manufacturer", n.manufacturer],
    ["Model", n.model],
    ["PartNumber", n.partNumber],
    ["SerialNumber", n.serialNumber],
    ["ProductionDate", n.productionDate],
    ["Version", n.version],
  ];
  return Object.fromEntries(pairs.filter((p): p is [string, string] => p[1] !== undefined));
}

/**
 * A stable UUID for the pod's chassis: the same site and pod name give the same UUID on every
 * controller and after every restart (name-based, RFC 9562 version 5 layout, over sha1).
 */
export function podUuid(site: string, pod: string): string {
  const h = createHash("sha1").update(`podwarden:${site}/${pod}`).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/** Where a part is, as its service label: the name the config gives it, which is what is on the pod's drawings. */
export const located = (label: string): Resource => ({ Location: { PartLocation: { ServiceLabel: label } } });

/** One of the pod's own sensors (the CDU's points), served in the chassis's Sensors collection. */
export interface PodSensor {
  id: string;
  name: string;
  point: string;
  readingType: "PressurekPa" | "Temperature" | "LiquidFlowLPM" | "Percent" | "Power";
  units: "kPa" | "Cel" | "L/min" | "%" | "W";
  /** the point's unit to the sensor's (kW to W) */
  scale?: number;
}

/** The CDU's configured points as sensors: a point the config does not name is no sensor. */
export function podSensors(points: CduConfig["points"]): PodSensor[] {
  const all: (Omit<PodSensor, "point"> & { point: string | undefined })[] = [
    { id: "CDUDifferentialPressure", name: "Secondary loop differential pressure", point: points.dpKpa, readingType: "PressurekPa", units: "kPa" },
    { id: "CDUSupplyTemperature", name: "CDU supply temperature", point: points.supplyTempC, readingType: "Temperature", units: "Cel" },
    { id: "CDUReturnTemperature", name: "CDU return temperature", point: points.returnTempC, readingType: "Temperature", units: "Cel" },
    { id: "CDUFlow", name: "Secondary loop total flow", point: points.totalFlowLpm, readingType: "LiquidFlowLPM", units: "L/min" },
    { id: "CDUReservoirLevel", name: "CDU reservoir level", point: points.reservoirPct, readingType: "Percent", units: "%" },
    { id: "CDUPower", name: "CDU electrical power (its own draw)", point: points.powerKw, readingType: "Power", units: "W", scale: 1000 },
  ];
  return all.filter((s): s is PodSensor => s.point !== undefined);
}
