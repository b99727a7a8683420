// First-order-plus-dead-time process: the textbook stand-in for one rack's return temperature.
//
//   y_ss = bias + gainU * u(t - deadTimeS) + gainD * d(t - deadTimeS)
//   tau * dy/dt = y_ss - y
//
// Used by the control-quality tests and for loop tuning in virtual time. The full pod model
// (sim/plant) is the thermal-hydraulic one; this one is deliberately simple and exact.
export interface FopdtParams {
  bias: number;
  gainU: number;
  gainD: number;
  tauS: number;
  deadTimeS: number;
  dtS: number;
}

export class Fopdt {
  y: number;
  private readonly uHistory: Float64Array;
  private readonly dHistory: Float64Array;
  private head = 0;

  constructor(
    private readonly p: FopdtParams,
    u0: number,
    d0: number,
  ) {
    const n = Math.max(1, Math.round(p.deadTimeS / p.dtS));
    this.uHistory = new Float64Array(n).fill(u0);
    this.dHistory = new Float64Array(n).fill(d0);
    this.y = this.steadyState(u0, d0);
  }

  steadyState(u: number, d: number): number {
    return this.p.bias + this.p.gainU * u + this.p.gainD * d;
  }

  /** Advances one dt with input u and disturbance d applied now (they act after the dead time). */
  step(u: number, d: number): number {
    const uDelayed = this.uHistory[this.head];
    const dDelayed = this.dHistory[this.head];
    this.uHistory[this.head] = u;
    this.dHistory[this.head] = d;
    this.head = (this.head + 1) % this.uHistory.length;
    const target = this.steadyState(uDelayed, dDelayed);
    this.y += ((target - this.y) * this.p.dtS) / this.p.tauS;
    return this.y;
  }
}
