// Motorised valves: the position follows the command at a finite stroke rate.
export { relativeKv, type ValveCharacteristic } from "../../pod/coolant.js";

export class StrokedValve {
  /** actual position, 0..100 % */
  position: number;
  /** commanded position, 0..100 % */
  command: number;
  /** a stuck valve ignores its command */
  stuck = false;

  constructor(
    /** seconds for a full 0 -> 100 % stroke */
    readonly strokeTimeS: number,
    initialPct: number,
  ) {
    this.position = initialPct;
    this.command = initialPct;
  }

  step(dtS: number): void {
    if (this.stuck) return;
    const maxMove = (100 / this.strokeTimeS) * dtS;
    const target = Math.min(Math.max(this.command, 0), 100);
    const delta = target - this.position;
    this.position += Math.abs(delta) <= maxMove ? delta : Math.sign(delta) * maxMove;
  }
}
