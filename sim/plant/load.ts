// Rack IT load: how much of its rated power each rack asks for, over time.
import type { Prng } from "../prng.js";

export type LoadProfile =
  | { profile: "idle"; pct: number }
  | { profile: "training"; lowPct: number; highPct: number; periodS: number }
  | { profile: "inference"; basePct: number; burstPct: number; meanBurstS: number; meanGapS: number }
  | { profile: "scripted"; pct: number };

/**
 * Demand in percent of rated power. Training racks step together (synchronous all-reduce
 * phases); inference racks burst independently, drawn from the seeded generator.
 */
export class LoadGenerator {
  private profile: LoadProfile;
  private bursting = false;
  private nextSwitchS = 0;

  constructor(
    profile: LoadProfile,
    private readonly rng: Prng,
  ) {
    this.profile = profile;
  }

  /** Switches to a fixed demand (a scenario's load step). */
  setScripted(pct: number): void {
    this.profile = { profile: "scripted", pct };
  }

  demandPct(tS: number): number {
    const p = this.profile;
    switch (p.profile) {
      case "idle":
      case "scripted":
        return p.pct;
      case "training":
        return tS % p.periodS < p.periodS / 2 ? p.highPct : p.lowPct;
      case "inference":
        while (tS >= this.nextSwitchS) {
          this.bursting = !this.bursting;
          const mean = this.bursting ? p.meanBurstS : p.meanGapS;
          this.nextSwitchS += -Math.log(1 - this.rng.next()) * mean;
        }
        return this.bursting ? p.burstPct : p.basePct;
    }
  }
}
