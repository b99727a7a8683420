// The supervisor's power decisions (pod/wiring.ts PodDecisions) in shared memory, for the leak
// thread: it writes each rack's power-off and cap from them and the hot path's isolation
// commands, so a rack that loses its coolant loses its power while the main thread is held.
// The real-time HIL scenario leak-while-main-thread-busy found the power-off 7.04 s late when
// only the main thread wrote it. The main thread writes the decisions at every actuator pass;
// each value is one Int32, read and written atomically: a rack's three values may come from two
// passes, each of which was a decision of the supervisor's.
import type { PodDecisions } from "../../pod/wiring.js";

/** A cap that is not a finite number: read back as NaN, which the wiring does not write. */
const NO_CAP = -1;

export class SharedDecisions {
  readonly buffer: SharedArrayBuffer;
  private readonly words: Int32Array;

  /** A new one holding `initial`, or a view on another thread's buffer. */
  constructor(
    private readonly racks: number,
    from: SharedArrayBuffer | PodDecisions,
  ) {
    this.buffer = from instanceof SharedArrayBuffer ? from : new SharedArrayBuffer(3 * racks * Int32Array.BYTES_PER_ELEMENT);
    this.words = new Int32Array(this.buffer);
    if (this.words.length !== 3 * racks) throw new RangeError(`shared decisions: ${this.words.length} words for ${racks} racks`);
    if (!(from instanceof SharedArrayBuffer)) this.write(from);
  }

  /** Stores `d`; true when a value changed (the leak thread is then asked for a pass at once). */
  write(d: PodDecisions): boolean {
    let changed = false;
    const put = (i: number, v: number): void => {
      if (Atomics.exchange(this.words, i, v) !== v) changed = true;
    };
    for (let r = 0; r < this.racks; r++) {
      const cap = d.powerCapsKw[r];
      put(3 * r, d.rackPowerOff[r] ? 1 : 0);
      put(3 * r + 1, d.coolantPending[r] ? 1 : 0);
      // tenths of a kW: what the wiring sends the devices anyway
      put(3 * r + 2, Number.isFinite(cap) && cap >= 0 ? Math.min(Math.round(cap * 10), 0x7fffffff) : NO_CAP);
    }
    return changed;
  }

  /** The decisions as last written; the pumps are not the leak thread's, and read enabled with no run decision. */
  read(): PodDecisions {
    const d: PodDecisions = { pumpEnable: true, pumpRun: [], rackPowerOff: [], powerCapsKw: [], coolantPending: [] };
    for (let r = 0; r < this.racks; r++) {
      d.rackPowerOff.push(Atomics.load(this.words, 3 * r) === 1);
      d.coolantPending.push(Atomics.load(this.words, 3 * r + 1) === 1);
      const cap = Atomics.load(this.words, 3 * r + 2);
      d.powerCapsKw.push(cap === NO_CAP ? NaN : cap / 10);
    }
    return d;
  }
}
