// The pod stage's config sections: `control` (loop tuning, input checks, leak isolation),
// `racks` and, from pod/cdu-config.ts, `cdu` (which point and output each signal is). The agent's schema embeds them;
// the bank's defaults come from here, so a daemon, the virtual pod and the tests all run the
// tuning the schema declares.
import type { SafeAction } from "../hotpath-as/bank-config.js";
import { validator } from "../lib/config-file.js";
import { arr, bool, int, num, obj, oneOf, optional, typed, type Infer, type Schema } from "../lib/schema-builders.js";
import type { CduConfig } from "./cdu-config.js";
import { ident, outputRef, pointRef } from "./config-refs.js";

/** A name used in topics and alarms. */
export { ident } from "./config-refs.js";

/** Checks on a two-state input (0 or 1): its age, and the ticks a fault or its clearing takes. */
const digitalChecks = (stale: string, description: string) =>
  obj(
    {
      staleMs: int(0, 3_600_000, 3000, `max sample age, ms (0 = unchecked); ${stale}`),
      debounceFault: int(1, 100_000, 20, "consecutive faulty ticks before the input is bad"),
      debounceClear: int(1, 100_000, 200, "consecutive clean ticks before it is good again"),
    },
    description,
  );

const safeAction = (def: SafeAction | undefined, when: string): Schema<SafeAction> =>
  typed<SafeAction>({
    description: `${when}: open (outMax), closed (outMin), hold (last output), or {fixed: value}`,
    oneOf: [
      { enum: ["open", "closed", "hold"] },
      { type: "object", additionalProperties: false, required: ["fixed"], properties: { fixed: { type: "number" } } },
    ],
    ...(def === undefined ? {} : { default: def }),
  });

interface LoopDefaults {
  /** relay autotune bounds: amplitude (output %), hysteresis floor and deviation bound (PV units) */
  autotune: { amplitude: number; hysteresisMin: number; deviationMax: number; noiseS: number; timeoutS: number };
  kp: number;
  ki: number;
  kff: number;
  outMin: number;
  outMax: number;
  outRate: number;
  spRamp: number;
  deadband: number;
  safeOnSensorFault: SafeAction;
  safeOnShutdown: SafeAction;
  safeOnLeaseLoss: SafeAction;
}

/** The fail-safe classes every loop's actuator declares besides a leak (docs/safety.md). */
function loopSafety(d: LoopDefaults) {
  return {
    safeOnSensorFault: safeAction(d.safeOnSensorFault, "while an input of the loop is bad, stale or invalid"),
    safeOnShutdown: safeAction(d.safeOnShutdown, "written at a clean stop (SIGTERM), before the heartbeat stops"),
    safeOnLeaseLoss: safeAction(
      d.safeOnLeaseLoss,
      "what the actuator's device does when its heartbeat lease expires (the agent died, or the device lost its link): written to the device's fail-position output where the config names one (racks[].outputs.failValve, cdu.outputs.failPumpSpeed), else declared as the device's own setting",
    ),
  };
}

function loopTuning<E extends Record<string, object>>(d: LoopDefaults, what: string, extra: E) {
  return obj(
    {
      ...extra,
      kp: num(0, 1e6, d.kp, "proportional gain, output % per PV unit"),
      ki: num(0, 1e6, d.ki, "integral gain, output % per (PV unit · s)"),
      kd: num(0, 1e6, 0, "derivative gain (on measurement), output % per (PV unit / s)"),
      tf: num(0, 3600, 0, "derivative filter time constant, s"),
      pvFilterS: num(0, 3600, 0, "first-order PV filter time constant, s (0 = none): the PID sees the filtered PV, the interlocks and checks the raw sample"),
      kff: num(-1e6, 1e6, d.kff, "feed-forward gain, output % per FF unit"),
      ffBias: num(-1e6, 1e6, 0, "subtracted from the FF input before the gain"),
      outMin: num(0, 100, d.outMin, "output envelope low end, % (the fail-closed value)"),
      outMax: num(0, 100, d.outMax, "output envelope high end, % (the fail-open value)"),
      outRate: num(0, 1e6, d.outRate, "output slew limit, %/s (0 = unlimited)"),
      spRamp: num(0, 1e6, d.spRamp, "setpoint ramp, PV units/s (0 = step)"),
      deadband: num(0, 1e6, d.deadband, "error deadband, PV units"),
      ...loopSafety(d),
      autotune: obj(
        {
          amplitude: num(0, 50, d.autotune.amplitude, "relay amplitude around the operating output, % (narrowed to the envelope; 0: this loop cannot be tuned)"),
          hysteresisMin: num(0, 1e6, d.autotune.hysteresisMin, "least relay hysteresis, PV units (the measured noise may ask for more: 1.5 x its half-range)"),
          deviationMax: num(0, 1e6, d.autotune.deviationMax, "the tuning aborts when the PV leaves the operating point by more than this, PV units"),
          noiseS: num(0.5, 600, d.autotune.noiseS, "output held this long while the PV's noise is measured, before the relay starts, s"),
          timeoutS: num(10, 7200, d.autotune.timeoutS, "the tuning aborts when it has not finished in this long, s"),
          cycles: int(2, 20, 4, "whole relay periods analysed (after a first one left out): more is steadier, and longer"),
          gainLimits: obj(
            {
              kpMin: num(0, 1e6, d.kp / 100, "least kp a tuning's proposal or an engineer's gains may apply (above 0: a loop with no proportional action is no controller)"),
              kpMax: num(0, 1e6, d.kp * 100, "most kp they may apply"),
              kiMax: num(0, 1e6, d.ki * 100, "most ki they may apply"),
              kdMax: num(0, 1e6, d.kp * 100, "most kd they may apply"),
            },
            "the envelope of gains applied over the config's (the gains command, `podwarden gains`): outside it they are refused; the config's own gains are the engineer's and are not held to it",
          ),
        },
        "relay autotune (docs/engineering.md): started by the tune command or `podwarden tune <loop>`; its bounds",
      ),
    },
    what,
  );
}

function pointChecks(d: { min: number; max: number; rateMax: number }, what: string) {
  return obj(
    {
      min: num(-1e9, 1e9, d.min, "valid range low"),
      max: num(-1e9, 1e9, d.max, "valid range high"),
      rateMax: num(0, 1e9, d.rateMax, "max change between samples, units/s (0 = unchecked)"),
      staleMs: int(0, 3_600_000, 3000, "max sample age, ms (0 = unchecked)"),
      stuckEps: num(0, 1e9, 0, "a change larger than this resets the stuck timer"),
      stuckMs: int(0, 86_400_000, 0, "no change beyond stuckEps for this long = stuck, ms (0 = unchecked)"),
      stuckMove: num(
        0,
        100,
        2,
        "for a point with a loop of its own (a rack's return temperature and flow: its valve; the loop dp: the pump), the plant around it: the point is stuck only once that loop's output has moved this far (output %) since the point last changed, and the point still has not answered stuckMs later; a steady, noiseless plant then trips nothing. 0: time alone judges (and judges every point without a loop: check-config warns of them)",
      ),
      debounceFault: int(1, 100_000, 20, "consecutive faulty ticks before the input is bad"),
      debounceClear: int(1, 100_000, 200, "consecutive clean ticks before it is good again"),
    },
    what,
  );
}

export const CONTROL_SCHEMA = obj(
  {
    periodMs: num(0.1, 100, 1, "control tick period, ms"),
    schedFifo: bool(true, "raise the control thread, and the leak thread one priority below it, to SCHED_FIFO where permitted (CAP_SYS_NICE); and the control plane's thread (the agent) to nice -10, ahead of the service plane, not to FIFO (docs/architecture.md, Threads)"),
    schedPriority: int(1, 99, 40, "SCHED_FIFO priority of the control thread"),
    warmupTicks: int(0, 10_000_000, 20000, "hot-path steps run on a scratch bank before the first real tick (JIT warm-up)"),
    returnTempSetpointC: num(10, 80, 45, "local default return-temperature setpoint, °C"),
    returnTempSetpointMinC: num(10, 80, 35, "lowest setpoint a command may set, °C"),
    returnTempSetpointMaxC: num(10, 80, 55, "highest setpoint a command may set, °C"),
    dpSetpointKpa: num(0, 1000, 120, "local default loop differential-pressure setpoint, kPa"),
    dpSetpointMinKpa: num(0, 1000, 60, "lowest dp setpoint a command may set, kPa"),
    dpSetpointMaxKpa: num(0, 1000, 200, "highest dp setpoint a command may set, kPa"),
    supplyTempSetpointC: num(5, 60, 30, "local default CDU supply-temperature setpoint (with cdu.supplyControl), °C"),
    supplyTempSetpointMinC: num(5, 60, 20, "lowest supply-temperature setpoint a command may set, °C"),
    supplyTempSetpointMaxC: num(5, 60, 40, "highest supply-temperature setpoint a command may set, °C"),
    setpointLeaseMaxMs: int(1000, 86_400_000, 3_600_000, "longest lease an upstream setpoint or Override may have, ms"),
    rackLoop: loopTuning(
      {
        ...{ kp: 4, ki: 0.4, kff: 0.4, outMin: 10, outMax: 100, outRate: 20, spRamp: 0, deadband: 0.05, safeOnSensorFault: "open", safeOnShutdown: "open", safeOnLeaseLoss: "open" },
        autotune: { amplitude: 10, hysteresisMin: 0.02, deviationMax: 2, noiseS: 10, timeoutS: 900 },
      },
      "rack return-temperature loop (valve), with feed-forward from rack power",
      {
        safeOnLeak: safeAction("closed", "while the rack is isolated (a leak, or an operator)"),
        minFlowLpm: num(
          0,
          10000,
          6,
          "minimum-flow floor, L/min: in Automatic the valve is held open at least far enough for this flow through the rack, whatever its heat (a lightly loaded rack's loop would otherwise throttle it below the loss-of-flow alarm, and a rack returned to service would never reach the flow its power waits for). check-config refuses a floor at or below supervisor.lossOfFlow.minLpm; racks[].minFlowLpm overrides it per rack",
        ),
        minFlowGain: num(0.01, 1000, 2, "how fast the floor opens the valve, % per (L/min short · s): the floor is an integral-only loop on the rack's flow"),
      },
    ),
    // no safeOnLeak: the pump serves every rack and is never isolated with one (a leak whose
    // isolation is not proven may stop it: supervisor.escalation.pumpStop)
    pumpLoop: loopTuning(
      {
        ...{ kp: 0.15, ki: 0.1, kff: 0, outMin: 30, outMax: 100, outRate: 10, spRamp: 5, deadband: 0.5, safeOnSensorFault: { fixed: 80 }, safeOnShutdown: { fixed: 80 }, safeOnLeaseLoss: { fixed: 80 } },
        autotune: { amplitude: 5, hysteresisMin: 0.5, deviationMax: 20, noiseS: 5, timeoutS: 300 },
      },
      "pump differential-pressure loop (speed)",
      {},
    ),
    // with cdu.supplyControl: the CDU's supply temperature held by the exchanger's primary-side
    // valve; like the pump, it serves every rack and is never isolated with one
    supplyLoop: loopTuning(
      {
        ...{ kp: 6, ki: 0.3, kff: 0, outMin: 0, outMax: 100, outRate: 5, spRamp: 0, deadband: 0.1, safeOnSensorFault: "open", safeOnShutdown: "open", safeOnLeaseLoss: "open" },
        autotune: { amplitude: 10, hysteresisMin: 0.05, deviationMax: 3, noiseS: 10, timeoutS: 1800 },
      },
      "CDU supply-temperature loop (the exchanger's primary-side valve: open cools), with cdu.supplyControl",
      {},
    ),
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
        limitSwitch: digitalChecks(
          "an older sample cannot prove an isolation",
          "checks on the isolation valves' closed limit switches (racks[].points.*IsolationClosedLimit, 1 at the limit), which join the isolation proof",
        ),
        pumpStatus: digitalChecks(
          "an older sample neither fails a pump over nor proves it running",
          "checks on the pumps' status inputs (cdu.pumps[].points: fault and running, 0 or 1), which lead/lag duty acts on",
        ),
      },
      "input validation per kind of point",
    ),
    isolation: obj(
      {
        isolatedFlowMaxLpm: num(0, 1000, 2, "flow below this proves a rack isolated, L/min"),
        deadlineMs: int(1, 3_600_000, 15000, "time allowed for that proof before escalating, ms"),
        leakSensorFault: oneOf(["hold", "isolate"], "hold", "what a faulty leak sensor does to its rack"),
        onLeaseLoss: oneOf(
          ["hold", "open"],
          "hold",
          "what the isolation valves' device does when its heartbeat lease expires: hold (an isolated rack stays isolated if the agent dies) or open; written to racks[].outputs.failIsolationOpen where named, else declared as the device's own setting",
        ),
        leakThread: bool(
          true,
          "poll the leak sensors and write the isolation valves and the racks' power outputs (power-off, cap) of Modbus TCP devices from a thread of their own, on a second connection to each such device, so that no work on the main thread (input floods, telemetry, garbage collection) delays an isolation or the power that follows it; off: the main thread's driver does it, for devices that accept one connection only. Serial (RTU) devices always stay with the main thread's driver (docs/safety.md)",
        ),
      },
      "leak isolation",
    ),
  },
  "the control loops and the hot path",
);

export const RACKS_SCHEMA = arr(
  obj(
    {
      name: ident("rack name, used in topics and alarms"),
      ratedKw: num(0.1, 10000, 120, "rated IT power, kW"),
      minPowerKw: num(0, 10000, 0, "power cap never set below this, kW"),
      minFlowLpm: optional(num(0, 10000, undefined, "this rack's minimum-flow floor, L/min, where it differs from control.rackLoop.minFlowLpm")),
      priority: int(0, 9, 5, "power budget priority: 0 is served first"),
      maxFlowLpm: optional(
        num(
          0.1,
          100_000,
          undefined,
          "the rack's flow with its control valve fully open at the pod's design differential pressure (control.dpSetpointKpa), L/min (optional): with it, the power budget caps the rack at the heat that flow can carry away at the current supply temperature (supervisor.powerBudget.coolant); without it, only its rating and share bound its cap",
        ),
      ),
      points: obj(
        {
          returnTempC: pointRef("rack return (outlet) temperature"),
          supplyTempC: pointRef("rack supply (inlet) temperature"),
          flowLpm: pointRef("rack coolant flow"),
          powerKw: pointRef("rack IT power"),
          leak: arr(pointRef("leak sensor"), "leak sensors (0 dry, 1 wet, 2 cable fault)", { minItems: 1, maxItems: 8 }),
          valvePositionPct: optional(pointRef("control valve position feedback, % (optional: shown beside the command, not used by control)")),
          supplyIsolationOpenLimit: optional(pointRef("supply isolation valve's open limit switch, 1 at the limit (optional: shown beside the command as open, closed or moving)")),
          supplyIsolationClosedLimit: optional(pointRef("supply isolation valve's closed limit switch, 1 at the limit (optional: where named, a leak's isolation is proven only once it reads closed; without it flow alone proves it, which a seized valve can pass)")),
          returnIsolationOpenLimit: optional(pointRef("return isolation valve's open limit switch, 1 at the limit (optional)")),
          returnIsolationClosedLimit: optional(pointRef("return isolation valve's closed limit switch, 1 at the limit (optional: joins the isolation proof, as supplyIsolationClosedLimit)")),
        },
        "the rack's inputs",
        ["returnTempC", "supplyTempC", "flowLpm", "powerKw", "leak"],
      ),
      outputs: obj(
        {
          valve: outputRef("control valve command, %"),
          supplyIsolation: outputRef("supply isolation valve (1 open)"),
          returnIsolation: outputRef("return isolation valve (1 open)"),
          powerCap: optional(outputRef("rack power cap, kW (optional)")),
          powerOff: optional(outputRef("rack power-off request (optional; leak escalation)")),
          failValve: optional(outputRef("the valve device's fail position while its lease is expired, % (optional): podwarden writes safeOnLeaseLoss there")),
          failIsolationOpen: optional(outputRef("the isolation valves' fail position while the lease is expired, 1 open 0 hold (optional): podwarden writes isolation.onLeaseLoss there")),
        },
        "the rack's actuators",
        ["valve", "supplyIsolation", "returnIsolation"],
      ),
      noCoolant: obj(
        {
          action: oneOf(
            ["power-off", "cap", "none"],
            "power-off",
            "while either isolation valve is commanded closed (a leak, or an operator's isolation), the rack's power goes to: power-off (outputs.powerOff set), or cap (outputs.powerCap at capKw); coolant and power move together. none: the rack has no power output podwarden can reach, said explicitly: an isolated rack then keeps its power, its own thermal protection the only thing that stops it, and the Warning alarm no-power-output:<rack> stands from the start to say so",
          ),
          capKw: num(0, 10000, 0, "the cap an isolated rack is held to with action cap, kW"),
          powerOffAboveC: num(
            30,
            120,
            60,
            "with action cap, the thermal backstop: a rack without coolant whose return temperature reaches this is powered off through outputs.powerOff until its coolant is back; without that output, a Critical alarm says it cannot be (no-coolant-backstop:<rack>), °C",
          ),
        },
        "the rack's power while it has no coolant (docs/agent.md, Coolant and power together)",
      ),
      failSafe: optional(
        obj(
          {
            safeOnLeak: optional(safeAction(undefined, "this rack's valve while the rack is isolated")),
            safeOnSensorFault: optional(safeAction(undefined, "this rack's valve while an input of its loop is bad")),
            safeOnShutdown: optional(safeAction(undefined, "this rack's valve at a clean stop")),
            safeOnLeaseLoss: optional(safeAction(undefined, "this rack's valve device when its lease expires")),
            isolationOnLeaseLoss: optional(oneOf(["hold", "open"], undefined, "this rack's isolation valves' device when its lease expires")),
          },
          "this rack's fail-safe settings where they differ from control.rackLoop and control.isolation (docs/safety.md)",
        ),
      ),
    },
    "one rack",
    ["name", "points", "outputs"],
  ),
  "the racks of the pod",
  { minItems: 1, maxItems: 64 },
);


/** The `control` section: loop tuning, input checks, leak isolation, the control thread. */
export type ControlConfig = Infer<typeof CONTROL_SCHEMA>;
/** A loop's tuning: the pump loop's has no safeOnLeak (it is never isolated with a rack). */
export type LoopTuning = ControlConfig["pumpLoop"];
export type RackLoopTuning = ControlConfig["rackLoop"];
export type PointChecks = ControlConfig["points"]["temperature"];
export type LeakChecks = ControlConfig["points"]["leak"];
export type IsolationConfig = ControlConfig["isolation"];
/** One entry of `racks`. */
export type RackConfig = Infer<typeof RACKS_SCHEMA>[number];
export { CDU_SCHEMA, type CduConfig } from "./cdu-config.js";

/** What the pod stage needs of a config: the wiring and the tuning. */
export interface PodConfig {
  racks: RackConfig[];
  cdu: CduConfig;
  control: ControlConfig;
}

/** Validates a `control` section alone, filling in its defaults (a schema's root takes no default of its own). */
const { default: _sectionDefault, ...CONTROL_ROOT } = CONTROL_SCHEMA as Record<string, unknown>;
export const validateControl = validator<ControlConfig>(CONTROL_ROOT);

/**
 * The `control` section as the schema's defaults make it: the one source of default tuning.
 * (A second table here once drifted from the schema: flow max 400 against 1000, leak debounce 3
 * against 1; the virtual pod and the benches then ran a tuning no daemon had.)
 */
export function defaultControl(): ControlConfig {
  return validateControl({}, "control defaults");
}

/** Problems a schema cannot state about the control section, as "key.path: reason". */
export function controlProblems(k: ControlConfig): string[] {
  const out: string[] = [];
  const ordered = (lo: number, hi: number, at: string, what: string): void => {
    if (!(lo <= hi)) out.push(`${at}: ${what}`);
  };
  ordered(k.returnTempSetpointMinC, k.returnTempSetpointMaxC, "control.returnTempSetpointMinC", "must be <= returnTempSetpointMaxC");
  ordered(k.returnTempSetpointMinC, k.returnTempSetpointC, "control.returnTempSetpointC", "must be within [returnTempSetpointMinC, returnTempSetpointMaxC]");
  ordered(k.returnTempSetpointC, k.returnTempSetpointMaxC, "control.returnTempSetpointC", "must be within [returnTempSetpointMinC, returnTempSetpointMaxC]");
  ordered(k.dpSetpointMinKpa, k.dpSetpointMaxKpa, "control.dpSetpointMinKpa", "must be <= dpSetpointMaxKpa");
  ordered(k.dpSetpointMinKpa, k.dpSetpointKpa, "control.dpSetpointKpa", "must be within [dpSetpointMinKpa, dpSetpointMaxKpa]");
  ordered(k.dpSetpointKpa, k.dpSetpointMaxKpa, "control.dpSetpointKpa", "must be within [dpSetpointMinKpa, dpSetpointMaxKpa]");
  ordered(k.supplyTempSetpointMinC, k.supplyTempSetpointMaxC, "control.supplyTempSetpointMinC", "must be <= supplyTempSetpointMaxC");
  ordered(k.supplyTempSetpointMinC, k.supplyTempSetpointC, "control.supplyTempSetpointC", "must be within [supplyTempSetpointMinC, supplyTempSetpointMaxC]");
  ordered(k.supplyTempSetpointC, k.supplyTempSetpointMaxC, "control.supplyTempSetpointC", "must be within [supplyTempSetpointMinC, supplyTempSetpointMaxC]");
  for (const loop of ["rackLoop", "pumpLoop", "supplyLoop"] as const) {
    const t = k[loop];
    ordered(t.outMin, t.outMax, `control.${loop}.outMin`, "must be <= outMax");
    for (const [safe, a] of Object.entries(t).filter(([key]) => key.startsWith("safeOn"))) {
      if (typeof a === "object" && "fixed" in a && (a.fixed < t.outMin || a.fixed > t.outMax)) out.push(`control.${loop}.${safe}.fixed: must be within [outMin, outMax]`);
    }
  }
  for (const kind of ["temperature", "flow", "power", "pressure"] as const) ordered(k.points[kind].min, k.points[kind].max, `control.points.${kind}.min`, "must be <= max");
  return out;
}

/** A rack's minimum-flow floor, L/min: its own where it has one, else the rack loop's. */
export function rackMinFlowLpm(control: Pick<ControlConfig, "rackLoop">, rack: Pick<RackConfig, "minFlowLpm">): number {
  return rack.minFlowLpm ?? control.rackLoop.minFlowLpm;
}

/** The most a rack may draw with no coolant: 0 kW when it powers off, else its no-coolant cap. */
export function noCoolantLimitKw(r: RackConfig): number {
  // none: nothing podwarden can write, but a rack without coolant should still draw nothing
  return r.noCoolant.action === "cap" ? r.noCoolant.capKw : 0;
}

/** Problems a schema cannot state about the racks' power coupling: an action with no output to act on. */
export function noCoolantProblems(racks: readonly RackConfig[]): string[] {
  const out: string[] = [];
  racks.forEach((r, i) => {
    const a = r.noCoolant.action;
    const at = `racks[${i}].noCoolant.action`;
    if (a === "none") {
      // none says there is no power output: one that exists is the action to take
      const has = r.outputs.powerOff !== undefined ? "powerOff: use power-off" : r.outputs.powerCap !== undefined ? "powerCap: use cap with capKw" : null;
      if (has !== null) out.push(`${at}: none says the rack has no power output, but it has outputs.${has}`);
      return;
    }
    const needs = a === "power-off" ? "powerOff" : "powerCap";
    if (r.outputs[needs] === undefined) {
      out.push(
        `${at}: ${a}${r.noCoolant.action === "power-off" ? " (the default)" : ""} needs outputs.${needs} (coolant and power move together: an isolated rack must not keep its power)${a === "power-off" && r.outputs.powerCap !== undefined ? "; or set action: cap with capKw" : ""}; or, where the rack has no power output podwarden can reach, set action: none, which leaves an isolated rack's power on and raises the Warning no-power-output:${r.name}`,
      );
    }
  });
  return out;
}
