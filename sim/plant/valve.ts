// Motorised valves: the position follows the command at a finite stroke rate.

export type ValveCharacteristic = "linear" | "equal-percentage";

/** Relative flow coefficient (0..1) at opening x (0..100 %). */
export function relativeKv(characteristic: ValveCharacteristic, openingPct: number, rangeability = 50): number {
  const x = Math.min(Math.max(openingPct, 0), 100) / 100;
  if (characteristic === "linear") return x;
  // modified equal-percentage: exact 0 when shut, 1 when fully open
  return (Math.pow(rangeability, x) - 1) / (rangeability - 1);
}

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
