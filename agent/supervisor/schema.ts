// The supervisor's config section (`supervisor`): its schema, and its type derived from it.
import { validator } from "../../lib/config-file.js";
import { bool, int, num, obj, optional, type Infer } from "../../lib/schema-builders.js";

/** The alarm classes whose delays may be set, by the family of their ids (agent/supervisor/alarm-classes.ts). */
const alarmClass = (what: string) =>
  obj(
    {
      onDelayMs: int(0, 3_600_000, 0, "a Warning of this class is raised only once its condition has held this long, ms (a Critical is never delayed)"),
      offDelayMs: optional(int(0, 3_600_000, undefined, "it clears once its condition has stayed false this long, ms (absent: supervisor.alarmClearDwellMs)")),
    },
    what,
  );

export const SUPERVISOR_SCHEMA = obj(
  {
    periodMs: int(10, 10_000, 100, "supervisor evaluation period, ms"),
    alarmClearDwellMs: int(0, 3_600_000, 5000, "a condition must stay clear this long before its alarm clears, ms: every class's off-delay unless alarmClasses sets its own"),
    alarmClasses: obj(
      {
        device: alarmClass("device:<device>: a device's link or its replies"),
        failsafe: alarmClass("failsafe:<loop>: a loop in fail-safe"),
        degraded: alarmClass("degraded:<loop>: a loop in control without a secondary input"),
        leakSensor: alarmClass("leak-sensor:<rack>: a leak sensor's cable fault or reading (the leak response itself is the hot path's, never delayed)"),
        flowMeter: alarmClass("flow-meter:<rack>: a flow meter without a good reading, at Warning"),
        overtemp: alarmClass("overtemp:<rack> at Warning (its deadband is supervisor.overTemp.hysteresisC)"),
        heatBalance: alarmClass("heat-balance:<rack> (on top of supervisor.heatBalance.dwellMs)"),
        valve: alarmClass("valve:<rack>: the valve watch's findings"),
        power: alarmClass("power:budget and power:coolant (on top of supervisor.powerBudget.alarmAfterMs and alarmHoldMs)"),
        overrun: alarmClass("control:overrun"),
      },
      "on- and off-delays per alarm class (ISA-18.2); an alarm of no class listed here, and every Critical, is raised at once and clears after alarmClearDwellMs",
    ),
    alarmChatter: obj(
      {
        windowMs: int(1000, 86_400_000, 600_000, "the window a chattering alarm is judged over, ms"),
        maxRaises: int(1, 1000, 3, "an alarm raised more than this often within the window is chattering: counted in podwarden_alarms_chattering and the status's alarms.chattering"),
      },
      "chattering alarms",
    ),
    overrun: obj(
      {
        // 0.01: on the 2-core development VM, a settled demo pod misses 0.4-0.5 % of its deadlines
        // (40-55 of ~10 800 ticks per 10 s, p999 lateness 2.3 ms, measured 2026-12-01): ordinary
        // jitter of a shared machine, not lost control; 1 % sustained over 10 s is
        windowMs: int(1000, 600_000, 10_000, "control-tick overruns and lateness are also counted over this recent window (status control.recent, the recent metrics), ms"),
        maxShare: num(0, 1, 0.01, "control:overrun is raised when more than this share of the window's ticks missed their deadline (0.01: 100 of 10 000); a single late tick never raises it"),
      },
      "the alarm control:overrun",
    ),
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
        deadbandLpm: num(0, 1000, 0.5, "once raised, the condition holds until the flow is this far above minLpm, L/min: a flow hovering at the threshold does not make the alarm chatter"),
      },
      "loss-of-flow alarm",
    ),
    heatBalance: obj(
      {
        enabled: bool(true, "cross-check rack power against flow × ΔT"),
        tolerancePct: num(1, 1000, 25, "allowed disagreement, % of rack power"),
        minPowerKw: num(0, 10000, 10, "only checked above this rack power, kW"),
        dwellMs: int(0, 3_600_000, 30000, "disagreement must last this long, with the rack's return temperature steady, ms"),
        steadyC: num(0.01, 50, 1, "the return temperature is steady while it stays within this of where the disagreement's dwell began, °C: a rack warming or cooling stores or gives up heat its coolant does not show, and restarts the dwell"),
        supplyToleranceC: num(0, 50, 2, "rack supply vs CDU supply (without a good CDU supply reading, vs the median of the other racks' supply readings): beyond this the supply sensor is suspect, °C"),
        flowPeerTolerancePct: num(1, 1000, 30, "flow per valve opening vs the other racks: beyond this the flow meter is suspect, %"),
      },
      "heat-balance cross-check",
    ),
    escalation: obj(
      {
        pumpStop: bool(false, "an unproven isolation stops the pump for the whole pod (needs cdu.outputs.pumpEnable: a config error without it)"),
        rackPowerOff: bool(true, "an unproven isolation requests rack power-off (needs outputs.powerOff on every rack: a config error without it; set false for racks that have none)"),
      },
      "what an unproven leak isolation escalates to",
    ),
    noCoolantPower: obj(
      {
        toleranceKw: num(0, 10000, 2, "an isolated rack may draw this much above its no-coolant limit (racks[].noCoolant) before it counts as powered, kW"),
        delayMs: int(0, 3_600_000, 10000, "for this long (a power-off or a cap takes time to act at the rack), ms"),
      },
      "the alarm no-coolant-power:<rack>: an isolated rack's power did not follow its coolant",
    ),
    powerBudget: obj(
      {
        podKw: num(0, 1e6, 1e6, "pod power budget, kW"),
        writeCaps: bool(true, "write each rack's cap to its powerCap output (needs outputs.powerCap on every rack: a config error without it; with false the caps are computed but not in force, and telemetry reports powerCapKw null)"),
        headroomPct: num(0, 100, 10, "a rack near its cap is given this much above its draw, %"),
        alarmAfterMs: int(0, 3_600_000, 10_000, "power:budget is raised once the budget has constrained a cap this long without a break, ms: at a start, before the racks' power is read, every rack counts at its rating for a moment"),
        alarmHoldMs: int(0, 3_600_000, 120_000, "power:budget holds this long after the budget last constrained a cap, ms: racks whose draw moves about their share made it raise and clear every 15-40 s, and the pod flip between Running and Degraded with it (power:coolant keeps the same two times)"),
        coolant: obj(
          {
            returnLimitC: num(
              10,
              100,
              48,
              "a rack with racks[].maxFlowLpm is capped at the heat that flow carries from its supply temperature up to this return temperature, °C: the most it may draw, valve fully open, before its return passes it. check-config refuses one above supervisor.overTemp.warningC",
            ),
            unknownSupplyC: num(0, 100, 40, "the supply temperature a rack's coolant limit is figured at while neither its own supply reading nor the CDU's is good, °C: the warmest supply the plant is designed for"),
          },
          "the coolant's bound on each rack's cap (docs/agent.md, Power budget): the heat its coolant can carry away at its maximum flow and the current supply temperature",
        ),
      },
      "pod power budget",
    ),
  },
  "modes, alarms, leak escalation, power budget",
);

export type SupervisorConfig = Infer<typeof SUPERVISOR_SCHEMA>;

/** Validates a `supervisor` section alone, filling in its defaults (as validateControl does for `control`). */
const { default: _sectionDefault, ...SUPERVISOR_ROOT } = SUPERVISOR_SCHEMA as Record<string, unknown>;
let compiled: ((data: unknown, file?: string) => SupervisorConfig) | undefined;
export function validateSupervisor(data: unknown): SupervisorConfig {
  // compiled on first use: the daemon validates the whole config, and needs no second schema compiled at its start
  compiled ??= validator<SupervisorConfig>(SUPERVISOR_ROOT);
  return compiled(data, "supervisor");
}
