// The `cdu` section: the CDU's inputs, its pump or its redundant pumps in lead/lag duty, and the
// exchanger's primary-side valve where podwarden holds the supply temperature with it.
import { arr, int, num, obj, optional, type Infer } from "../lib/schema-builders.js";
import { ident, outputRef, pointRef } from "./config-refs.js";

export const CDU_SCHEMA = obj(
  {
    points: obj(
      {
        dpKpa: pointRef("loop differential pressure"),
        // many CDUs have no supply sensor of their own: without it the heat-balance check runs
        // but cannot compare a rack's supply sensor with the CDU's
        supplyTempC: optional(pointRef("CDU supply temperature (optional: the heat-balance check uses it to tell a bad rack supply sensor, and without it compares the racks' supply readings with each other; the power budget figures coolant limits at the warmer of it and the rack's)")),
        // watched and shown (the HMI's CDU box, the pod's status): no loop or interlock acts on them
        returnTempC: optional(pointRef("CDU return temperature (optional: shown, no loop acts on it)")),
        totalFlowLpm: optional(pointRef("the secondary loop's total flow through the CDU, L/min (optional: shown, no loop acts on it)")),
        reservoirPct: optional(pointRef("the CDU's reservoir (expansion tank) level, % (optional: shown, no loop acts on it)")),
        powerKw: optional(pointRef("the CDU's own electrical draw, kW, from its meter (optional: shown, as Redfish's PowerWatts; the IT load it cools is each rack's heat, never this)")),
        pumpSpeedPct: optional(pointRef("a CDU with one pump: its speed feedback, % (optional: shown, no loop acts on it; with cdu.pumps, each pump's points.speedPct)")),
      },
      "CDU inputs",
      ["dpKpa"],
    ),
    ratedHeatKw: optional(num(0.1, 1e6, undefined, "the CDU's rated heat rejection, kW (optional): the racks' caps together stay within it, as within supervisor.powerBudget.podKw")),
    outputs: obj(
      {
        pumpSpeed: optional(outputRef("pump speed command, % (a CDU with one pump; with cdu.pumps, leave these out)")),
        pumpEnable: optional(outputRef("pump run enable (optional; leak escalation stops it)")),
        failPumpSpeed: optional(outputRef("the pump device's fail speed while its lease is expired, % (optional): podwarden writes pumpLoop.safeOnLeaseLoss there")),
      },
      "CDU actuators of a CDU with one pump",
    ),
    pumps: optional(
      arr(
        obj(
          {
            name: ident("pump name, used in alarms (pump:<name>), status and metrics"),
            outputs: obj(
              {
                speed: outputRef("its drive's speed command, %: the pump loop's output while it runs, 0 while it stands by"),
                enable: optional(outputRef("its run enable (optional): 1 while it runs; leak escalation stops it")),
                failSpeed: optional(outputRef("its drive's fail speed while its lease is expired, % (optional): podwarden writes pumpLoop.safeOnLeaseLoss there")),
              },
              "its drive's outputs",
              ["speed"],
            ),
            points: obj(
              {
                fault: optional(pointRef("1 while its drive reports a trip or fault: the lead fails over at once")),
                running: optional(pointRef("1 while it turns (its proof of running): a lead commanded to run that has not proven it within cdu.pumpDuty.failoverMs fails over")),
                speedPct: optional(pointRef("its speed feedback, % (optional: shown, no loop acts on it)")),
              },
              "its status inputs (control.points.pumpStatus checks them); without either, a failure of this pump cannot be seen and check-config warns",
            ),
          },
          "one pump",
          ["name", "outputs"],
        ),
        "redundant pumps in parallel, in lead/lag duty (docs/agent.md, Pump duty): one leads on the pump loop's speed, the others stand by; a fault fails the lead over, and the lead rotates (instead of cdu.outputs)",
        { minItems: 2, maxItems: 4 },
      ),
    ),
    supplyControl: optional(
      obj(
        {
          valve: outputRef("the primary-side (facility water) valve's command, %: control.supplyLoop's output (open: more of the facility's cooling)"),
          failValve: optional(outputRef("the valve device's fail position while its lease is expired, % (optional): podwarden writes supplyLoop.safeOnLeaseLoss there")),
        },
        "supply-temperature control (optional): control.supplyLoop holds cdu.points.supplyTempC at control.supplyTempSetpointC through the exchanger's primary-side valve (needs cdu.points.supplyTempC); without it the supply temperature is only watched",
        ["valve"],
      ),
    ),
    pumpDuty: obj(
      {
        failoverMs: int(100, 600_000, 5000, "a lead commanded to run that has not proven running (its running point at 1) within this fails over to a standby, ms; a fault point fails it over at once"),
        rotateHours: num(0, 8760, 168, "the lead rotates to the next pump on this wall-clock schedule (slots of this many hours since the epoch, so a restart keeps the slot's lead), hours; 0: never"),
        overlapMs: int(0, 600_000, 10_000, "at a rotation the old lead keeps running this long after the new one starts, so flow never rests on a pump still coming up to speed, ms"),
      },
      "lead/lag duty of cdu.pumps",
    ),
  },
  "the coolant distribution unit",
  ["points"],
);

/** The `cdu` section. */
export type CduConfig = Infer<typeof CDU_SCHEMA>;
