// Motorised valves: the position follows the command at a finite stroke rate, and each valve can
// carry the faults a real one develops (sim/faults.ts `valve`): a dead band, stiction, slow
// travel, or seized outright.
export { relativeKv, type ValveCharacteristic } from "../../pod/coolant.js";

/** A valve's injected faults; all zero/false is a clean valve. */
export interface ValveFaults {
  /** seized: ignores its command */
  stuck: boolean;
  /**
   * dead band, % of travel: the position answers only once the command is more than half of it
   * away, and then settles half of it short (backlash in the linkage)
   */
  deadbandPct: number;
  /**
   * stiction, % of travel: the position holds until the command is more than this away, then
   * slips the whole way at once (packing friction: static above dynamic)
   */
  stictionPct: number;
  /** the stroke takes this many times as long (a weak actuator, low air pressure) */
  strokeFactor: number;
}

export const CLEAN_VALVE: Readonly<ValveFaults> = { stuck: false, deadbandPct: 0, stictionPct: 0, strokeFactor: 1 };

export class StrokedValve {
  /** actual position, 0..100 % */
  position: number;
  /** commanded position, 0..100 % */
  command: number;
  readonly faults: ValveFaults = { ...CLEAN_VALVE };

  constructor(
    /** seconds for a full 0 -> 100 % stroke */
    readonly strokeTimeS: number,
    initialPct: number,
  ) {
    this.position = initialPct;
    this.command = initialPct;
  }

  /** a stuck valve ignores its command */
  get stuck(): boolean {
    return this.faults.stuck;
  }

  set stuck(on: boolean) {
    this.faults.stuck = on;
  }

  clearFaults(): void {
    Object.assign(this.faults, CLEAN_VALVE);
  }

  step(dtS: number): void {
    const f = this.faults;
    if (f.stuck) return;
    const target = Math.min(Math.max(this.command, 0), 100);
    const away = target - this.position;
    if (f.stictionPct > 0) {
      // stick, then slip: friction holds it until the actuator's force (the command's distance)
      // overcomes it, and the valve then jumps; a slip is far faster than the stroke rate
      if (Math.abs(away) > f.stictionPct) this.position = target;
      return;
    }
    // with a dead band the valve settles half of it short of the command, and does not move at
    // all while the command stays within it
    const half = f.deadbandPct / 2;
    if (Math.abs(away) <= half) return;
    const goal = target - Math.sign(away) * half;
    const delta = goal - this.position;
    const maxMove = (100 / (this.strokeTimeS * f.strokeFactor)) * dtS;
    this.position += Math.abs(delta) <= maxMove ? delta : Math.sign(delta) * maxMove;
  }
}
