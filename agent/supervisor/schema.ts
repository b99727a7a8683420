// The supervisor's config section (`supervisor`): its schema, and its type derived from it.
import { bool, int, num, obj, type Infer } from "../../lib/schema-builders.js";

export const SUPERVISOR_SCHEMA = obj(
  {
    periodMs: int(10, 10_000, 100, "supervisor evaluation period, ms"),
    alarmClearDwellMs: int(0, 3_600_000, 5000, "a condition must stay clear this long before its alarm clears, ms"),
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
      },
      "loss-of-flow alarm",
    ),
    heatBalance: obj(
      {
        enabled: bool(true, "cross-check rack power against flow × ΔT"),
        tolerancePct: num(1, 1000, 25, "allowed disagreement, % of rack power"),
        minPowerKw: num(0, 10000, 10, "only checked above this rack power, kW"),
        dwellMs: int(0, 3_600_000, 30000, "disagreement must last this long, ms"),
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
