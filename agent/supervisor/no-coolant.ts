// Coolant and power together, the supervisor's half (the wiring's half is PodWiring.powerCommand):
// power that did not follow the coolant (no-coolant-power), power held back until the coolant is
// seen again (coolantPending), and cap mode's thermal backstop (no-coolant-backstop).
import { noCoolantLimitKw, type RackConfig } from "../../pod/config.js";
import type { AlarmManager } from "./alarms.js";
import type { SupervisorConfig } from "./schema.js";
import type { Reading } from "./reading.js";

/** What the watch reads of one rack each pass. */
export interface NoCoolantInputs {
  returnTempC: Reading;
  flowLpm: Reading;
  powerKw: Reading;
  /** an isolation valve is commanded closed */
  noCoolant?: boolean;
}

export class NoCoolantWatch {
  private readonly dryPowerSince: (number | null)[];
  /** isolation valves reopened, flow not yet proven back: power stays at the no-coolant limit */
  readonly coolantPending: boolean[];
  /** cap mode's backstop tripped: held until the rack has its coolant back */
  private readonly backstop: boolean[];

  constructor(racks: number) {
    this.dryPowerSince = new Array<number | null>(racks).fill(null);
    this.coolantPending = new Array<boolean>(racks).fill(false);
    this.backstop = new Array<boolean>(racks).fill(false);
  }

  /**
   * One rack's pass: its alarms, whether its power waits for its coolant, and whether cap mode's
   * backstop asks for its power-off (returned; the caller ORs it into the decisions).
   */
  update(r: number, rack: RackConfig, x: NoCoolantInputs, s: SupervisorConfig, a: AlarmManager, now: number): { coolantPending: boolean; powerOff: boolean } {
    // proven at the rack's power meter: an isolated rack that still draws more than its
    // no-coolant limit (a cap not applied, a power-off not honoured) heats with no coolant to
    // carry the heat away
    // said in the config (noCoolant.action: none): podwarden cannot take this rack's power, and
    // says so from the start, not first at a leak
    a.update(`no-power-output:${rack.name}`, rack.noCoolant.action === "none", {
      severity: "Warning",
      source: rack.name,
      message: `${rack.name} has no power output podwarden can reach (racks[].noCoolant.action: none): if it loses its coolant (a leak, an isolation), its power stays on and its own thermal protection is all that stops it`,
    });
    const limitKw = noCoolantLimitKw(rack);
    const dry = x.noCoolant === true && x.powerKw.good && x.powerKw.value > limitKw + s.noCoolantPower.toleranceKw;
    this.dryPowerSince[r] = dry ? (this.dryPowerSince[r] ?? now) : null;
    a.update(`no-coolant-power:${rack.name}`, dry && now - (this.dryPowerSince[r] ?? now) >= s.noCoolantPower.delayMs, {
      severity: "Critical",
      source: rack.name,
      message:
        rack.noCoolant.action === "none"
          ? `${rack.name} is isolated but draws ${x.powerKw.value.toFixed(1)} kW, and podwarden has no power output for it (noCoolant.action: none): power it down at the rack`
          : `${rack.name} is isolated but draws ${x.powerKw.value.toFixed(1)} kW, above its no-coolant limit of ${limitKw} kW (${rack.noCoolant.action}): its power did not follow its coolant`,
    });

    // power comes back with the coolant, not before it: a rack whose isolation valves reopen (a
    // leak reset, return-rack) keeps its no-coolant limit until its flow is proven back (a good
    // reading at lossOfFlow.minLpm). Its valves take seconds to travel; given its power at once,
    // the demo's reset rack heated to 49.9 °C on the way back (50 °C is the Warning), and over
    // it on a loaded machine. A flow meter with no good reading keeps the rack at its limit.
    if (x.noCoolant === true) this.coolantPending[r] = true;
    else if (this.coolantPending[r] && x.flowLpm.good && x.flowLpm.value >= s.lossOfFlow.minLpm) this.coolantPending[r] = false;
    const withoutCoolant = x.noCoolant === true || this.coolantPending[r];

    // cap mode's thermal backstop: a capped rack with no coolant still heats (an isolated rack
    // capped at 5 kW reached 88-89 °C, issue 53). Past its limit its power goes off where it has
    // a power-off output, held until its coolant is back; where it has none, a Critical alarm
    // says it cannot be escalated
    const t = x.returnTempC;
    const byCap = rack.noCoolant.action === "cap";
    this.backstop[r] = byCap && withoutCoolant && (this.backstop[r] || (t.good && t.value >= rack.noCoolant.powerOffAboveC));
    const canPowerOff = rack.outputs.powerOff !== undefined;
    const reading = t.good ? `${t.value.toFixed(1)} °C` : `above ${rack.noCoolant.powerOffAboveC} °C when last read`;
    a.update(`no-coolant-backstop:${rack.name}`, this.backstop[r], {
      severity: "Critical",
      source: rack.name,
      message: canPowerOff
        ? `${rack.name} is without coolant and capped at ${rack.noCoolant.capKw} kW, and its return temperature reached ${reading} (limit ${rack.noCoolant.powerOffAboveC} °C): power-off requested until its coolant is back`
        : `${rack.name} is without coolant and capped at ${rack.noCoolant.capKw} kW, and its return temperature reached ${reading} (limit ${rack.noCoolant.powerOffAboveC} °C): it has no power-off output (racks[].outputs.powerOff), so podwarden cannot take its power: power it down at the rack`,
    });
    return { coolantPending: this.coolantPending[r], powerOff: this.backstop[r] && canPowerOff };
  }
}
