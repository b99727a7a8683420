// A transport delay: the value that entered a pipe `delayS` seconds ago.
// Samples are pushed at a fixed dt; reads interpolate between the two nearest samples.
export class DelayLine {
  private readonly buf: Float64Array;
  private head = 0; // index of the newest sample

  constructor(
    private readonly dtS: number,
    readonly maxDelayS: number,
    initial: number,
  ) {
    this.buf = new Float64Array(Math.ceil(maxDelayS / dtS) + 2).fill(initial);
  }

  push(value: number): void {
    this.head = (this.head + 1) % this.buf.length;
    this.buf[this.head] = value;
  }

  /** The value pushed `delayS` ago (clamped to [0, maxDelayS]). */
  read(delayS: number): number {
    const d = Math.min(Math.max(delayS, 0), this.maxDelayS) / this.dtS;
    const whole = Math.floor(d);
    const frac = d - whole;
    const n = this.buf.length;
    const a = this.buf[(this.head - whole + n) % n];
    const b = this.buf[(this.head - whole - 1 + 2 * n) % n];
    return a + (b - a) * frac;
  }
}
