// The agent's config schema: one JSON Schema that validation, defaults and
// docs/configuration.md all come from. Units are in the key names.
import { MODBUS_SCHEMA } from "../../drivers/modbus/config.js";
import { MQTT_INGEST_POINT_SCHEMA } from "../../drivers/mqtt-ingest.js";
import { UPLINK_SCHEMA } from "../uplink/schema.js";
import { mqttConnectionProperties } from "../../lib/mqtt-connection.js";
import { METRICS_SCHEMA } from "../ops/metrics-schema.js";
import { int, num, obj } from "../../lib/schema-builders.js";

const ident = { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9_-]*$" };
const pointRef = (description: string): object => ({ type: "string", pattern: "^[A-Za-z][A-Za-z0-9_.-]*$", description: `point id (device.point or an MQTT ingest id): ${description}` });
const outputRef = (description: string): object => ({ type: "string", pattern: "^[A-Za-z][A-Za-z0-9_.-]*$", description: `Modbus output id (device.output): ${description}` });

const SAFE_ACTION = {
  description: "declared safe output: open (outMax), closed (outMin), hold (last output), or {fixed: value}",
  oneOf: [
    { enum: ["open", "closed", "hold"] },
    { type: "object", additionalProperties: false, required: ["fixed"], properties: { fixed: { type: "number" } } },
  ],
};

function loopTuning(d: { kp: number; ki: number; kff: number; outMin: number; outMax: number; outRate: number; spRamp: number; deadband: number; safeOnLeak: unknown; safeOnSensorFault: unknown }, what: string): object {
  return obj(
    {
      kp: num(0, 1e6, d.kp, "proportional gain, output % per PV unit"),
      ki: num(0, 1e6, d.ki, "integral gain, output % per (PV unit · s)"),
      kd: num(0, 1e6, 0, "derivative gain (on measurement), output % per (PV unit / s)"),
      tf: num(0, 3600, 0, "derivative filter time constant, s"),
      kff: num(-1e6, 1e6, d.kff, "feed-forward gain, output % per FF unit"),
      ffBias: num(-1e6, 1e6, 0, "subtracted from the FF input before the gain"),
      outMin: num(0, 100, d.outMin, "output envelope low end, % (the fail-closed value)"),
      outMax: num(0, 100, d.outMax, "output envelope high end, % (the fail-open value)"),
      outRate: num(0, 1e6, d.outRate, "output slew limit, %/s (0 = unlimited)"),
      spRamp: num(0, 1e6, d.spRamp, "setpoint ramp, PV units/s (0 = step)"),
      deadband: num(0, 1e6, d.deadband, "error deadband, PV units"),
      safeOnLeak: { ...SAFE_ACTION, default: d.safeOnLeak },
      safeOnSensorFault: { ...SAFE_ACTION, default: d.safeOnSensorFault },
    },
    what,
  );
}

function pointChecks(d: { min: number; max: number; rateMax: number }, what: string): object {
  return obj(
    {
      min: num(-1e9, 1e9, d.min, "valid range low"),
      max: num(-1e9, 1e9, d.max, "valid range high"),
      rateMax: num(0, 1e9, d.rateMax, "max change between samples, units/s (0 = unchecked)"),
      staleMs: int(0, 3_600_000, 3000, "max sample age, ms (0 = unchecked)"),
      stuckEps: num(0, 1e9, 0, "a change larger than this resets the stuck timer"),
      stuckMs: int(0, 86_400_000, 0, "no change beyond stuckEps for this long = stuck, ms (0 = unchecked)"),
      debounceFault: int(1, 100_000, 20, "consecutive faulty ticks before the input is bad"),
      debounceClear: int(1, 100_000, 200, "consecutive clean ticks before it is good again"),
    },
    what,
  );
}

export const AGENT_SCHEMA = {
  $id: "podwarden-agent",
  type: "object",
  additionalProperties: false,
  required: ["site", "pod", "racks", "cdu"],
  patternProperties: { "^x-": { description: "ignored: a place for YAML anchors" } },
  properties: {
    site: { ...ident, description: "site id: the second level of every MQTT topic" },
    pod: { ...ident, description: "pod id: the third level of every MQTT topic" },
    stateDir: { type: "string", minLength: 1, description: "directory for state that must survive a restart (leak latches, power budget, spool, replay guard); default $STATE_DIRECTORY, set by systemd's StateDirectory; one daemon per directory, and a reload cannot change it" },
    control: obj(
      {
        periodMs: num(0.1, 100, 1, "control tick period, ms"),
        schedFifo: { type: "boolean", default: true, description: "raise the control thread (only) to SCHED_FIFO where permitted" },
        schedPriority: int(1, 99, 40, "SCHED_FIFO priority of the control thread"),
        warmupTicks: int(0, 10_000_000, 20000, "hot-path steps run on a scratch bank before the first real tick (JIT warm-up)"),
        returnTempSetpointC: num(10, 80, 45, "local default return-temperature setpoint, °C"),
        returnTempSetpointMinC: num(10, 80, 35, "lowest setpoint a command may set, °C"),
        returnTempSetpointMaxC: num(10, 80, 55, "highest setpoint a command may set, °C"),
        dpSetpointKpa: num(0, 1000, 120, "local default loop differential-pressure setpoint, kPa"),
        dpSetpointMinKpa: num(0, 1000, 60, "lowest dp setpoint a command may set, kPa"),
        dpSetpointMaxKpa: num(0, 1000, 200, "highest dp setpoint a command may set, kPa"),
        setpointLeaseMaxMs: int(1000, 86_400_000, 3_600_000, "longest lease an upstream setpoint may have, ms"),
        rackLoop: loopTuning({ kp: 4, ki: 0.4, kff: 0.4, outMin: 10, outMax: 100, outRate: 20, spRamp: 0, deadband: 0.05, safeOnLeak: "closed", safeOnSensorFault: "open" }, "rack return-temperature loop (valve), with feed-forward from rack power"),
        pumpLoop: loopTuning({ kp: 0.15, ki: 0.1, kff: 0, outMin: 30, outMax: 100, outRate: 10, spRamp: 5, deadband: 0.5, safeOnLeak: "hold", safeOnSensorFault: { fixed: 80 } }, "pump differential-pressure loop (speed)"),
        points: obj(
          {
            temperature: pointChecks({ min: 0, max: 95, rateMax: 20 }, "checks on temperature inputs, °C"),
            flow: pointChecks({ min: 0, max: 1000, rateMax: 0 }, "checks on flow inputs, L/min"),
            power: pointChecks({ min: 0, max: 1000, rateMax: 0 }, "checks on rack power inputs, kW"),
            pressure: pointChecks({ min: 0, max: 1000, rateMax: 0 }, "checks on pressure inputs, kPa"),
            leak: obj(
              {
                staleMs: int(0, 3_600_000, 3000, "max leak sample age, ms"),
                // 1: a polled leak input holds each sample for (poll period / tick) ticks, so a
                // debounce of that many ticks or fewer rejects no glitch and only adds latency
                debounceFault: int(1, 100_000, 1, "consecutive wet ticks that isolate; to reject a one-sample glitch it must exceed the leak poll period in ticks (and delays isolation by as much)"),
                debounceClear: int(1, 100_000, 50, "consecutive dry ticks that forget earlier wet ticks"),
              },
              "checks on leak inputs (0 dry, 1 wet, 2 cable fault)",
            ),
          },
          "input validation per kind of point",
        ),
        isolation: obj(
          {
            isolatedFlowMaxLpm: num(0, 1000, 2, "flow below this proves a rack isolated, L/min"),
            deadlineMs: int(1, 3_600_000, 15000, "time allowed for that proof before escalating, ms"),
            leakSensorFault: { enum: ["hold", "isolate"], default: "hold", description: "what a faulty leak sensor does to its rack" },
          },
          "leak isolation",
        ),
      },
      "the control loops and the hot path",
    ),
    racks: {
      type: "array",
      minItems: 1,
      maxItems: 64,
      description: "the racks of the pod",
      items: obj(
        {
          name: { ...ident, description: "rack name, used in topics and alarms" },
          ratedKw: num(0.1, 10000, 120, "rated IT power, kW"),
          minPowerKw: num(0, 10000, 0, "power cap never set below this, kW"),
          priority: int(0, 9, 5, "power budget priority: 0 is served first"),
          points: obj(
            {
              returnTempC: pointRef("rack return (outlet) temperature"),
              supplyTempC: pointRef("rack supply (inlet) temperature"),
              flowLpm: pointRef("rack coolant flow"),
              powerKw: pointRef("rack IT power"),
              leak: { type: "array", minItems: 1, maxItems: 8, items: pointRef("leak sensor"), description: "leak sensors (0 dry, 1 wet, 2 cable fault)" },
            },
            "the rack's inputs",
            ["returnTempC", "supplyTempC", "flowLpm", "powerKw", "leak"],
          ),
          outputs: obj(
            {
              valve: outputRef("control valve command, %"),
              supplyIsolation: outputRef("supply isolation valve (1 open)"),
              returnIsolation: outputRef("return isolation valve (1 open)"),
              powerCap: outputRef("rack power cap, kW (optional)"),
              powerOff: outputRef("rack power-off request (optional; leak escalation)"),
            },
            "the rack's actuators",
            ["valve", "supplyIsolation", "returnIsolation"],
          ),
        },
        "one rack",
        ["name", "points", "outputs"],
      ),
    },
    cdu: obj(
      {
        points: obj({ dpKpa: pointRef("loop differential pressure"), supplyTempC: pointRef("CDU supply temperature") }, "CDU inputs", ["dpKpa", "supplyTempC"]),
        outputs: obj({ pumpSpeed: outputRef("pump speed command, %"), pumpEnable: outputRef("pump run enable (optional; leak escalation stops it)") }, "CDU actuators", ["pumpSpeed"]),
      },
      "the coolant distribution unit",
      ["points", "outputs"],
    ),
    supervisor: obj(
      {
        periodMs: int(10, 10_000, 100, "supervisor evaluation period, ms"),
        alarmClearDwellMs: int(0, 3_600_000, 5000, "a condition must stay clear this long before its alarm clears, ms"),
        overTemp: obj(
          {
            warningC: num(10, 100, 50, "return temperature that raises a Warning, °C"),
            criticalC: num(10, 100, 55, "return temperature that raises a Critical alarm, °C"),
            hysteresisC: num(0, 20, 1, "clears this far below the threshold, °C"),
          },
          "over-temperature tiers",
        ),
        lossOfFlow: obj(
          {
            minLpm: num(0, 1000, 5, "flow below this with the rack in service is a loss of flow, L/min"),
            delayMs: int(0, 3_600_000, 5000, "for this long, ms"),
          },
          "loss-of-flow alarm",
        ),
        heatBalance: obj(
          {
            enabled: { type: "boolean", default: true, description: "cross-check rack power against flow × ΔT" },
            tolerancePct: num(1, 1000, 25, "allowed disagreement, % of rack power"),
            minPowerKw: num(0, 10000, 10, "only checked above this rack power, kW"),
            dwellMs: int(0, 3_600_000, 30000, "disagreement must last this long, ms"),
            supplyToleranceC: num(0, 50, 2, "rack supply vs CDU supply: beyond this the supply sensor is suspect, °C"),
            flowPeerTolerancePct: num(1, 1000, 30, "flow per valve opening vs the other racks: beyond this the flow meter is suspect, %"),
          },
          "heat-balance cross-check",
        ),
        escalation: obj(
          {
            pumpStop: { type: "boolean", default: false, description: "an unproven isolation stops the pump for the whole pod (needs cdu.outputs.pumpEnable)" },
            rackPowerOff: { type: "boolean", default: true, description: "an unproven isolation requests rack power-off (needs outputs.powerOff)" },
          },
          "what an unproven leak isolation escalates to",
        ),
        powerBudget: obj(
          {
            podKw: num(0, 1e6, 1e6, "pod power budget, kW"),
            writeCaps: { type: "boolean", default: true, description: "write each rack's cap to its powerCap output" },
            headroomPct: num(0, 100, 10, "a rack near its cap is given this much above its draw, %"),
          },
          "pod power budget",
        ),
      },
      "modes, alarms, leak escalation, power budget",
    ),
    modbus: { ...MODBUS_SCHEMA, default: {} },
    uplink: UPLINK_SCHEMA,
    metrics: METRICS_SCHEMA,
    mqttIngest: {
      type: "object",
      additionalProperties: false,
      required: ["url", "points"],
      description: "sensors read from MQTT topics",
      properties: {
        ...mqttConnectionProperties("podwarden-<site>-<pod>-ingest"),
        maxClockSkewMs: int(0, 600_000, 2000, "a source time (points[].timePath) further ahead of this controller's clock than this is invalid, ms"),
        points: { type: "array", items: MQTT_INGEST_POINT_SCHEMA, description: "ingested points" },
      },
    },
    log: obj(
      {
        level: { enum: ["fatal", "error", "warn", "info", "debug", "trace"], default: "info", description: "log level" },
        modules: { type: "object", additionalProperties: { enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"] }, default: {}, description: "per-module levels, e.g. {drivers: warn}" },
      },
      "logging (pino, JSON on stdout)",
    ),
  },
};
