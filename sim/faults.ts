// Fault actions: the one vocabulary that scenario files and the live control interface share.
import { monoMs } from "../lib/clock.js";
import { validator } from "../lib/config-file.js";
import type { PodPlant } from "./plant/pod-plant.js";
import type { PodDevices } from "./devices/pod-devices.js";
import type { SensorFault } from "./devices/field-device.js";
import type { RedfishBmc } from "./devices/redfish-bmc.js";
import type { StrokedValve } from "./plant/valve.js";

export type FaultAction =
  | { leak: string; state?: "wet" | "dry" | "cable-fault" }
  | { sensor: string; fault: "stuck" | "drift" | "noise" | "nan" | "value" | "clear"; value?: number; ratePerS?: number; sigma?: number }
  | { device: string; offline?: boolean; slowMs?: number; resetEvery?: number; lineNoisePct?: number; exception?: { code: number; functions?: number[] } | null }
  | { bmc: string; slowMs?: number; error500?: boolean; unauthorized?: boolean; stale?: boolean; unhealthy?: boolean; dropStream?: boolean }
  | { valveStuck: string; stuck?: boolean }
  | { powerStuck: string; stuck?: boolean }
  | { valve: string; stuck?: boolean; deadbandPct?: number; stictionPct?: number; strokeFactor?: number }
  | { pumpTrip: boolean; pump?: number }
  | { load: string; pct: number }
  | { primarySupplyTempC: number }
  | { clear: "all" };

const finite = { type: "number" };
export const FAULT_ACTION_PROPERTIES = {
  leak: { type: "string", description: "rack name (rack-N): set its leak state" },
  state: { enum: ["wet", "dry", "cable-fault"], description: "with leak: the new state (default wet)" },
  sensor: { type: "string", description: "device.value, e.g. rack-3.returnTempC" },
  fault: { enum: ["stuck", "drift", "noise", "nan", "value", "clear"], description: "with sensor: the fault" },
  value: { ...finite, description: "with fault: value — the value reported" },
  ratePerS: { ...finite, description: "with fault: drift — units per second" },
  sigma: { ...finite, minimum: 0, description: "with fault: noise — standard deviation" },
  device: { type: "string", description: "device name (cdu, rack-N)" },
  offline: { type: "boolean", description: "with device: stop answering" },
  slowMs: { type: "integer", minimum: 0, maximum: 60000, description: "with device or bmc: answer this much later" },
  resetEvery: { type: "integer", minimum: 0, maximum: 1_000_000, description: "with device: reset its Modbus TCP connection (RST) after every this-many answers on it, as a flaky switch port or a device restarting its network stack does (0 clears); real time only: virtual time has no connections" },
  lineNoisePct: { type: "number", minimum: 0, maximum: 100, description: "with device: damage this share of its answers on the Modbus RTU line, % (a bit flipped, a frame cut short, garbage before or after), as electrical noise on a serial line does (0 clears); real time over RTU only: its TCP answers and virtual time are untouched" },
  exception: {
    description: "with device: answer with this Modbus exception code (null clears)",
    oneOf: [
      { type: "null" },
      {
        type: "object",
        additionalProperties: false,
        required: ["code"],
        properties: {
          code: { type: "integer", minimum: 1, maximum: 255 },
          functions: { type: "array", items: { type: "integer", minimum: 1, maximum: 127 } },
        },
      },
    ],
  },
  bmc: { type: "string", description: "rack name: a fault of its Redfish BMC (devices.redfish)" },
  error500: { type: "boolean", description: "with bmc: answer every request 500" },
  unauthorized: { type: "boolean", description: "with bmc: refuse every credential (401)" },
  stale: { type: "boolean", description: "with bmc: freeze its readings, their ReadingTime too, under a Health that stays OK" },
  unhealthy: { type: "boolean", description: "with bmc: every sensor says Status.Health Critical, its Reading still there" },
  dropStream: { type: "boolean", description: "with bmc: end its open event streams now" },
  valveStuck: { type: "string", description: "rack name: freeze its control valve" },
  powerStuck: { type: "string", description: "rack name: its power-off does not take (a welded contactor, a PDU that ignores its command): it keeps drawing its load with power-off requested" },
  stuck: { type: "boolean", description: "with valveStuck, powerStuck or valve: seize it (true, the default) or release it (false)" },
  valve: { type: "string", description: "a valve: rack-N (its control valve), rack-N.supplyIsolation, rack-N.returnIsolation, or cdu.primaryValve (the exchanger's primary side); with stuck, deadbandPct, stictionPct, strokeFactor (each left as it is when not given)" },
  deadbandPct: { ...finite, minimum: 0, maximum: 50, description: "with valve: dead band, % of travel (the position answers only beyond half of it, and settles half of it short; 0 clears)" },
  stictionPct: { ...finite, minimum: 0, maximum: 50, description: "with valve: stiction, % of travel (the position holds until the command is this far away, then slips the whole way at once; 0 clears)" },
  strokeFactor: { ...finite, minimum: 1, maximum: 100, description: "with valve: its stroke takes this many times as long (1 clears)" },
  pumpTrip: { type: "boolean", description: "trip (true) or reset (false) a CDU pump (pump 1 unless `pump` says which)" },
  pump: { type: "integer", minimum: 1, maximum: 4, description: "with pumpTrip: which pump, from 1 (plant.pump.count)" },
  load: { type: "string", description: "rack name, or all: set demand" },
  pct: { ...finite, minimum: 0, maximum: 100, description: "with load: demand, %" },
  primarySupplyTempC: { ...finite, minimum: 5, maximum: 45, description: "facility supply temperature, °C" },
  clear: { const: "all", description: "clear every injected fault" },
};

export const ACTION_KEYS = ["leak", "sensor", "device", "bmc", "valveStuck", "powerStuck", "valve", "pumpTrip", "load", "primarySupplyTempC", "clear"] as const;

export const FAULT_ACTION_SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: FAULT_ACTION_PROPERTIES,
};

/** Exactly one action key per action, and the keys that go with it. */
export function actionProblems(a: Record<string, unknown>, at: string): string[] {
  const keys = ACTION_KEYS.filter((k) => k in a);
  if (keys.length !== 1) return [`${at}: needs exactly one of ${ACTION_KEYS.join(", ")} (has ${keys.length === 0 ? "none" : keys.join(", ")})`];
  const need = (k: string): string[] => (k in a ? [] : [`${at}.${k}: required with ${keys[0]}`]);
  if (keys[0] === "sensor") return need("fault");
  if (keys[0] === "load") return need("pct");
  return [];
}

export const validateFaultAction = validator<FaultAction>(FAULT_ACTION_SCHEMA, (a) => actionProblems(a, "action"));

export class FaultTarget {
  constructor(
    private readonly plant: PodPlant,
    private readonly devices: PodDevices,
    private readonly bmcs: readonly RedfishBmc[] = [],
  ) {}

  private rack(name: string): number {
    const m = /^rack-(\d+)$/.exec(name);
    const r = m === null ? -1 : Number(m[1]) - 1;
    if (r < 0 || r >= this.plant.racks.length) throw new Error(`no rack "${name}" (rack-1 .. rack-${this.plant.racks.length})`);
    return r;
  }

  /** A valve by name: rack-N (control), rack-N.supplyIsolation, rack-N.returnIsolation. */
  private valve(name: string): StrokedValve {
    if (name === "cdu.primaryValve") return this.plant.cdu.primaryValve;
    const [rackName, which = "control"] = name.split(".", 2);
    const r = this.plant.racks[this.rack(rackName)];
    if (which === "control") return r.controlValve;
    if (which === "supplyIsolation") return r.supplyIso;
    if (which === "returnIsolation") return r.returnIso;
    throw new Error(`no valve "${name}" (rack-N, rack-N.supplyIsolation, rack-N.returnIsolation, cdu.primaryValve)`);
  }

  private device(name: string): PodDevices["all"][number] {
    const d = this.devices.all.find((x) => x.name === name);
    if (d === undefined) throw new Error(`no device "${name}"`);
    return d;
  }

  /** Applies one action. Throws an Error with a clear message on an unknown rack, device or value. */
  apply(a: FaultAction): void {
    if ("leak" in a) {
      const rack = this.plant.racks[this.rack(a.leak)];
      rack.leak = a.state ?? "wet";
      rack.leakChangedAtMs = monoMs();
    } else if ("sensor" in a) {
      const dot = a.sensor.indexOf(".");
      if (dot < 0) throw new Error(`sensor "${a.sensor}" must be device.value`);
      const dev = this.device(a.sensor.slice(0, dot));
      const value = a.sensor.slice(dot + 1);
      const f: SensorFault | null =
        a.fault === "clear"
          ? null
          : a.fault === "drift"
            ? { kind: "drift", ratePerS: a.ratePerS ?? 0.1 }
            : a.fault === "noise"
              ? { kind: "noise", sigma: a.sigma ?? 0.5 }
              : a.fault === "value"
                ? { kind: "value", value: a.value ?? 0 }
                : { kind: a.fault };
      dev.setSensorFault(value, f);
    } else if ("device" in a) {
      const dev = this.device(a.device);
      if (a.offline !== undefined) dev.faults.offline = a.offline;
      if (a.slowMs !== undefined) dev.faults.slowMs = a.slowMs;
      if (a.resetEvery !== undefined) dev.faults.resetEvery = a.resetEvery;
      if (a.lineNoisePct !== undefined) dev.faults.lineNoisePct = a.lineNoisePct;
      if (a.exception !== undefined) dev.faults.exception = a.exception ?? undefined;
    } else if ("bmc" in a) {
      const b = this.bmcs.find((x) => x.name === a.bmc);
      if (b === undefined) throw new Error(`no BMC "${a.bmc}" (devices.redfish serves one per rack)`);
      if (a.slowMs !== undefined) b.faults.slowMs = a.slowMs;
      if (a.error500 !== undefined) b.faults.error500 = a.error500;
      if (a.unauthorized !== undefined) b.faults.unauthorized = a.unauthorized;
      if (a.stale !== undefined) b.setStale(a.stale);
      if (a.unhealthy !== undefined) b.faults.unhealthy = a.unhealthy;
      if (a.dropStream === true) b.dropStreams();
    } else if ("valveStuck" in a) {
      this.plant.racks[this.rack(a.valveStuck)].controlValve.stuck = a.stuck ?? true;
    } else if ("powerStuck" in a) {
      this.plant.racks[this.rack(a.powerStuck)].powerStuckOn = a.stuck ?? true;
    } else if ("valve" in a) {
      const f = this.valve(a.valve).faults;
      if (a.stuck !== undefined) f.stuck = a.stuck;
      if (a.deadbandPct !== undefined) f.deadbandPct = a.deadbandPct;
      if (a.stictionPct !== undefined) f.stictionPct = a.stictionPct;
      if (a.strokeFactor !== undefined) f.strokeFactor = a.strokeFactor;
    } else if ("pumpTrip" in a) {
      const m = this.plant.cdu.pumps[(a.pump ?? 1) - 1];
      if (m === undefined) throw new Error(`no pump ${a.pump ?? 1}: the plant has ${this.plant.cdu.pumps.length} (plant.pump.count)`);
      m.tripped = a.pumpTrip;
    } else if ("load" in a) {
      const racks = a.load === "all" ? this.plant.racks : [this.plant.racks[this.rack(a.load)]];
      for (const r of racks) r.load.setScripted(a.pct);
    } else if ("primarySupplyTempC" in a) {
      this.plant.cdu.primarySupplyTempC = a.primarySupplyTempC;
    } else {
      for (const d of this.devices.all) d.clearFaults();
      for (const b of this.bmcs) b.clearFaults();
      for (const r of this.plant.racks) {
        r.leak = "dry";
        r.powerStuckOn = false;
        for (const v of [r.controlValve, r.supplyIso, r.returnIso]) v.clearFaults();
      }
      this.plant.cdu.primaryValve.clearFaults();
      for (const m of this.plant.cdu.pumps) m.tripped = false;
    }
  }
}
