// Simulator config: `podwarden sim -c configs/sim-pod.yaml`. Documented in docs/simulator.md.
import { loadYamlFile, validator } from "../lib/config-file.js";
import { int, num, obj, oneOf, optional, str, typed } from "../lib/schema-builders.js";
import type { LoadProfile } from "./plant/load.js";
import type { PlantParams } from "./plant/pod-plant.js";

// Defaults cannot apply inside oneOf, so every key of the chosen profile is required.
const range = (minimum: number, maximum: number, description: string): object => num(minimum, maximum, undefined, description);

export const LOAD_PROFILE_SCHEMA = {
  description: "rack IT load profile",
  type: "object",
  required: ["profile"],
  properties: { profile: { enum: ["idle", "training", "inference", "scripted"] } },
  discriminator: { propertyName: "profile" },
  oneOf: [
    {
      type: "object",
      additionalProperties: false,
      required: ["profile", "pct"],
      properties: { profile: { const: "idle" }, pct: range(0, 100, "demand, % of rated power") },
    },
    {
      type: "object",
      additionalProperties: false,
      required: ["profile", "lowPct", "highPct", "periodS"],
      properties: {
        profile: { const: "training" },
        lowPct: range(0, 100, "demand between steps, %"),
        highPct: range(0, 100, "demand during a step, %"),
        periodS: range(0.1, 86400, "step period, s (all racks step together)"),
      },
    },
    {
      type: "object",
      additionalProperties: false,
      required: ["profile", "basePct", "burstPct", "meanBurstS", "meanGapS"],
      properties: {
        profile: { const: "inference" },
        basePct: range(0, 100, "demand between bursts, %"),
        burstPct: range(0, 100, "demand during a burst, %"),
        meanBurstS: range(0.01, 86400, "mean burst length, s"),
        meanGapS: range(0.01, 86400, "mean gap between bursts, s"),
      },
    },
    {
      type: "object",
      additionalProperties: false,
      required: ["profile", "pct"],
      properties: { profile: { const: "scripted" }, pct: range(0, 100, "demand, % (changed by scenario load steps)") },
    },
  ],
  default: { profile: "idle", pct: 60 },
};

/** A profile in a list: no default (the list says every rack's). */
const { default: _default, ...LOAD_PROFILE_ITEM } = LOAD_PROFILE_SCHEMA;

export const SIM_SCHEMA = {
  $id: "podwarden-sim",
  type: "object",
  additionalProperties: false,
  properties: {
    seed: int(0, 2 ** 31 - 1, 1, "seed for every random draw (noise, inference bursts)"),
    plant: obj(
      {
        dtS: num(0.0005, 0.1, 0.01, "plant integration step, s"),
        racks: int(1, 64, 8, "number of racks"),
        rackRatedKw: num(1, 1000, 120, "rated IT power per rack, kW"),
        primarySupplyTempC: num(5, 45, 32, "facility (primary) supply temperature, °C"),
        pump: obj(
          {
            count: int(1, 4, 2, "identical pumps in parallel, each with its own drive on the CDU device (pump 1 runs at the start, the others stand by): a lead and its standbys for cdu.pumps"),
            shutoffKpa: num(10, 1000, 250, "pump head at 100 % speed and zero flow, kPa"),
            resistanceKpaPerLpm2: num(1e-7, 1, 5e-5, "pump curve droop, kPa per (L/min)²"),
            rampPctPerS: num(0.1, 100, 20, "pump speed ramp, %/s"),
            initialSpeedPct: num(0, 100, 70, "pump speed at start, %"),
          },
          "CDU pumps",
        ),
        hx: obj(
          {
            effectiveness: num(0.05, 1, 0.85, "heat exchanger effectiveness"),
            timeConstantS: num(0.1, 3600, 20, "heat exchanger thermal time constant, s"),
            primaryValveStrokeS: num(0.1, 600, 30, "the primary-side (facility water) valve's full-stroke time, s: it sets the primary flow through the exchanger, and so its effectiveness (open: `effectiveness`; closed: none)"),
          },
          "CDU heat exchanger",
        ),
        valve: obj(
          {
            characteristic: { enum: ["linear", "equal-percentage"], default: "equal-percentage", description: "control valve characteristic" },
            strokeTimeS: num(0.1, 600, 10, "control valve full-stroke time, s"),
            kvMax: num(0.1, 1000, 16, "rack branch conductance fully open, (L/min)/√kPa"),
            initialPct: num(0, 100, 70, "control valve position at start, %"),
          },
          "rack control valves",
        ),
        isolationValve: obj({ strokeTimeS: num(0.1, 600, 4, "isolation valve full-stroke time, s") }, "rack isolation valves"),
        rack: obj(
          {
            thermalMassKjPerK: num(0.1, 100000, 60, "rack coolant and cold-plate thermal mass, kJ/K"),
            pipeVolumeL: num(0.01, 10000, 15, "pipe volume CDU to rack (transport delay), L"),
            gpuThermalResistanceKPerKw: num(0, 10, 0.25, "GPU temperature rise over return per kW, K/kW"),
            gpuThrottleC: num(30, 120, 85, "GPU temperature where clocks throttle, °C"),
          },
          "rack thermal model",
        ),
        bypassKv: num(0, 1000, 1, "CDU bypass conductance, (L/min)/√kPa"),
        reservoir: obj(
          {
            volumeL: num(1, 100000, 200, "coolant reservoir volume, L"),
            staticPressureKpa: num(1, 1000, 150, "loop static pressure when full, kPa"),
          },
          "coolant reservoir",
        ),
        leakRateLpm: num(0, 1000, 6, "coolant lost through an unisolated leak, L/min"),
        load: LOAD_PROFILE_SCHEMA,
        rackLoads: optional(
          typed<LoadProfile[]>({
            type: "array",
            maxItems: 64,
            items: { ...LOAD_PROFILE_ITEM, description: "this rack's load profile" },
            description: "a load profile per rack, in rack order, over `load` (a varied pod: idle racks, busy ones, jobs that start and stop); racks beyond the list take `load`",
          }),
        ),
      },
      "the thermal-hydraulic model",
    ),
    devices: obj(
      {
        host: { type: "string", default: "127.0.0.1", description: "address the Modbus TCP servers bind" },
        basePort: int(0, 65535, 15020, "CDU on basePort, rack N on basePort + N; 0 = ephemeral ports"),
        leaseMs: int(0, 65535, 3000, "comms-loss lease at power-up, ms (0 disables)"),
        leaseStyle: oneOf(["register", "counter", "comms"] as const, "register", "how the devices keep their lease (docs/safety.md, Device leases): register, any write to the heartbeat register renews it (a module's watchdog-reset register); counter, only a write of a new value (a heartbeat counter); comms, any request at all (a module's communication watchdog)"),
        failValvePct: num(0, 100, 100, "control valve fail position, %"),
        failPumpPct: num(0, 100, 80, "pump fail speed, %"),
        failIsolationOpen: { type: "boolean", default: false, description: "isolation valves open when the lease expires (default: hold)" },
        redfish: optional(
          obj(
            {
              basePort: int(0, 65535, 0, "rack N's BMC on basePort + N - 1; 0 = ephemeral ports"),
              user: str("the BMCs' user name", { default: "admin" }),
              password: str("the BMCs' password", { default: "podwarden-sim" }),
              limitRampKwPerS: num(0.1, 1e6, 50, "how fast a BMC moves its rack's applied power cap to a new limit, kW/s"),
              trays: int(1, 16, 4, "GPU trays per rack: per-tray power and temperature sensors"),
              tls: optional(
                obj(
                  { certFile: str("PEM certificate the BMCs serve", { minLength: 1 }), keyFile: str("its PEM private key", { minLength: 1 }) },
                  "serve HTTPS with this certificate (default: plain HTTP)",
                  ["certFile", "keyFile"],
                ),
              ),
            },
            "a Redfish BMC per rack (loopback): sensors, leak detector, power limit, event stream",
          ),
        ),
        rtu: optional(typed<{ path: string; baudRate: number; wireTime?: boolean }>({
          type: "object",
          additionalProperties: false,
          required: ["path"],
          properties: {
            path: { type: "string", description: "serial device the RTU bus front opens" },
            baudRate: int(1200, 921600, 115200, "baud rate"),
            wireTime: { type: "boolean", default: false, description: "take a request in, and send its answer out, each after its time on a wire at baudRate (11 bits a character), as a real line would: a pty carries bytes at once whatever its rate" },
          },
          description: "optional Modbus RTU front serving every device by unit id",
        })),
      },
      "the Modbus field devices",
    ),
    control: obj(
      {
        host: { type: "string", default: "127.0.0.1", description: "address the control interface binds" },
        port: int(0, 65535, 8502, "HTTP control interface port; 0 = ephemeral"),
      },
      "the live control interface (HTTP JSON)",
    ),
    scenario: { type: "string", description: "scenario file to play (path relative to this config)" },
  },
};

export interface SimConfig {
  seed: number;
  plant: PlantParams;
  devices: {
    host: string;
    basePort: number;
    leaseMs: number;
    leaseStyle: "register" | "counter" | "comms";
    failValvePct: number;
    failPumpPct: number;
    failIsolationOpen: boolean;
    rtu?: { path: string; baudRate: number; wireTime?: boolean };
    redfish?: { basePort: number; user: string; password: string; limitRampKwPerS: number; trays: number; tls?: { certFile: string; keyFile: string } };
  };
  control: { host: string; port: number };
  scenario?: string;
}

export const validateSimConfig = validator<SimConfig>(SIM_SCHEMA);

export function loadSimConfig(path: string): SimConfig {
  return loadYamlFile(path, validateSimConfig);
}

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

export interface SimOverrides {
  seed?: number;
  plant?: DeepPartial<Omit<PlantParams, "load" | "rackLoads">> & { load?: LoadProfile; rackLoads?: LoadProfile[] };
  devices?: Partial<Omit<SimConfig["devices"], "redfish">> & { redfish?: Partial<NonNullable<SimConfig["devices"]["redfish"]>> };
  control?: Partial<SimConfig["control"]>;
}

/** A fully defaulted config, with overrides (tests use it with ephemeral ports). */
export function simConfig(overrides: SimOverrides = {}): SimConfig {
  return validateSimConfig(structuredClone(overrides));
}
