// What the supervisor reads each pass, put together from a source of readings: the pod loop's
// (the hot path's verdict on each point and the value its driver saw) and the virtual pod's (the
// bank's) alike, so the supervisor that judges a HIL scenario in virtual time reads what the
// daemon's does. Pure.
import type { PodConfig } from "../../pod/config.js";
import type { PodLayout } from "../../pod/layout.js";
import { cduPumps, type PumpSpec } from "../../pod/pumps.js";
import type { Reading } from "./reading.js";
import type { SupervisorInputs } from "./supervisor.js";

/** Where the readings come from: a point by its bank slot and its id, and each rack's isolation words. */
export interface ReadingSource {
  reading(bankIndex: number, pointId: string): Reading;
  manualIsolate(rack: number): boolean;
  /** an isolation valve is commanded closed */
  noCoolant(rack: number): boolean;
}

/** What the pass knows besides the readings: the clocks, the control worker's health and words, the devices. */
export type PassFacts = Omit<SupervisorInputs, "racks" | "cduSupplyTempC" | "cduDpKpa" | "pumps">;

const NO_CDU_SUPPLY: Reading = { value: NaN, good: false, why: "no CDU supply sensor configured" };

/** `pumps`: the CDU's pumps (pod/pumps.ts), where the caller keeps them rather than build the list each pass. */
export function supervisorInputs(c: Pick<PodConfig, "racks" | "cdu">, lay: PodLayout, src: ReadingSource, facts: PassFacts, pumps: readonly PumpSpec[] = cduPumps(c.cdu)): SupervisorInputs {
  return {
    ...facts,
    racks: c.racks.map((r, i) => ({
      returnTempC: src.reading(lay.racks[i].returnTempC, r.points.returnTempC),
      supplyTempC: src.reading(lay.racks[i].supplyTempC, r.points.supplyTempC),
      flowLpm: src.reading(lay.racks[i].flowLpm, r.points.flowLpm),
      powerKw: src.reading(lay.racks[i].powerKw, r.points.powerKw),
      leak: lay.racks[i].leaks.map((slot, k) => src.reading(slot, r.points.leak[k])),
      manualIsolate: src.manualIsolate(i),
      noCoolant: src.noCoolant(i),
    })),
    cduSupplyTempC: c.cdu.points.supplyTempC === undefined ? NO_CDU_SUPPLY : src.reading(lay.cdu.supplyTempC, c.cdu.points.supplyTempC),
    cduDpKpa: src.reading(lay.cdu.dpKpa, c.cdu.points.dpKpa),
    pumps: pumps.map((p, k) => {
      const slots = lay.cdu.pumps[k];
      return {
        fault: p.fault === undefined || slots.fault === undefined ? undefined : src.reading(slots.fault, p.fault),
        running: p.running === undefined || slots.running === undefined ? undefined : src.reading(slots.running, p.running),
      };
    }),
  };
}
