// Partial-stroke tests of the racks' isolation valves. A stuck isolation valve defeats leak
// isolation, and nothing shows it until the leak: these valves stand open for months. The test
// holds one valve's close command for a small share of its stroke, sees its open limit switch
// clear (it moved), opens it again and sees the open limit made again (it came back), timing
// both. It never opens anything the hot path closed: the close it holds is ANDed into the
// isolation writes (pod/wiring.ts setStroke), and the rack keeps its coolant, so its power is not
// touched. One valve at a time, refused while the rack is in any interlock, released at once on a
// leak anywhere in the pod.
import * as L from "../../hotpath-as/assembly/layout.js";

export type IsoValve = "supply" | "return";
export const ISO_VALVES: readonly IsoValve[] = ["supply", "return"];
/** the valve's bit in PodWiring.setStroke */
export const strokeBit = (v: IsoValve): number => (v === "supply" ? 1 : 2);

/** A limit switch reading: 1 made, 0 clear, with its source time (monotonic ms); null: no good reading. */
export type LimitReading = { value: number; atMs: number } | null;

export type StrokeState = "running" | "passed" | "failed" | "aborted";

/** One partial-stroke test, running or finished (status, the stroke command, events). */
export interface StrokeResult {
  rack: string;
  valve: IsoValve;
  state: StrokeState;
  by: string;
  startedAt: string;
  endedAt?: string;
  reason?: string;
  /** from the close command to the first reading of the open limit clear, ms */
  breakawayMs?: number;
  /** how long the close command was held, ms */
  heldMs?: number;
  /** from the open command to the first reading of the open limit made again, ms */
  returnMs?: number;
  /** a failure that means the valve may not close on a leak: a Critical alarm */
  critical?: boolean;
}

/** The strokes as status shows them: the one running, the last ended, each valve's last verdict. */
export interface StrokeStatus {
  running: StrokeResult | null;
  /** the test that ended last since the agent started, aborted ones included */
  recent: StrokeResult | null;
  /** each valve's last verdict (passed or failed), kept across restarts */
  last: StrokeResult[];
}

export interface StrokeTiming {
  /** the close command is held at least this long, ms */
  holdMs: number;
  /** see partialStroke.timeoutS, ms */
  timeoutMs: number;
}

type Verdict = Pick<StrokeResult, "state" | "reason" | "breakawayMs" | "heldMs" | "returnMs" | "critical">;

/**
 * One valve's test, pure: fed the time and its limit switch readings, it says whether the close
 * command is held, and how the test ended. Only readings taken after a command count against it
 * (a poll answered before the command landed says nothing about the valve's answer to it).
 */
export class StrokeTest {
  private phase: "closing" | "returning" = "closing";
  private leftAtMs: number | null = null;
  private releasedAtMs = 0;

  constructor(
    private readonly timing: StrokeTiming,
    readonly startMs: number,
  ) {}

  get holdMs(): number {
    return this.timing.holdMs;
  }

  get timeoutMs(): number {
    return this.timing.timeoutMs;
  }

  get closing(): boolean {
    return this.phase === "closing";
  }

  /** Steps the test at `nowMs`; a verdict once it ended (then the close is released). */
  step(nowMs: number, open: LimitReading, closed: LimitReading): Verdict | null {
    const t = this.timing;
    if (open === null) return this.end({ state: "aborted", reason: "its open limit switch has no good reading" });
    if (closed !== null && closed.value === 1 && closed.atMs >= this.startMs) {
      // it went the whole way: the test was not partial, and the rack lost its coolant for a while
      return this.end({ state: "failed", reason: "it went all the way to its closed limit: the test's close was not partial (fullStrokeS longer than the valve's stroke?)" });
    }
    if (this.phase === "closing") {
      if (this.leftAtMs === null && open.value === 0 && open.atMs >= this.startMs) this.leftAtMs = open.atMs;
      const held = nowMs - this.startMs;
      if (this.leftAtMs !== null && held >= t.holdMs) {
        this.phase = "returning";
        this.releasedAtMs = nowMs;
        return null;
      }
      if (this.leftAtMs === null && held >= t.timeoutMs) {
        return this.end({ state: "failed", critical: true, reason: `it did not leave its open limit within ${(t.timeoutMs / 1000).toFixed(1)} s of the close command: stuck open, so it would not isolate its rack on a leak` });
      }
      return null;
    }
    if (open.value === 1 && open.atMs >= this.releasedAtMs) {
      return this.end({ state: "passed", returnMs: Math.max(0, open.atMs - this.releasedAtMs) });
    }
    // it needs about as long to come back as the close was held: a long hold must not read as stuck
    const back = t.timeoutMs + (this.releasedAtMs - this.startMs);
    if (nowMs - this.releasedAtMs >= back) {
      return this.end({ state: "failed", critical: true, reason: `it did not come back to its open limit within ${(back / 1000).toFixed(1)} s of the open command: stuck part-closed` });
    }
    return null;
  }

  /** The verdict of a test stopped from outside (a leak, an interlock, a stop): the close released. */
  abort(nowMs: number, reason: string): Verdict {
    if (this.phase === "closing") this.releasedAtMs = nowMs;
    return this.end({ state: "aborted", reason });
  }

  private end(v: Verdict): Verdict {
    const out: Verdict = { ...v };
    if (this.leftAtMs !== null) out.breakawayMs = Math.max(0, this.leftAtMs - this.startMs);
    const releasedAt = this.phase === "returning" ? this.releasedAtMs : null;
    if (releasedAt !== null) out.heldMs = releasedAt - this.startMs;
    return out;
  }
}

/** The hot path's view of the pod a test is decided from (the control thread's outputs). */
export interface StrokeOutputs {
  loopStatus: ArrayLike<number>;
  rackState: ArrayLike<number>;
  rackStatus: ArrayLike<number>;
  rackSupplyOpen: ArrayLike<number>;
  rackReturnOpen: ArrayLike<number>;
}

/** A leak anywhere in the pod (a wet sensor, or a rack isolated for one), in words; null: none. */
export function podLeak(o: StrokeOutputs, names: readonly string[]): string | null {
  const wet = names.filter((_, r) => (o.rackStatus[r] & L.RS_LEAK_WET) !== 0 || ((o.rackStatus[r] & L.RS_LATCHED) !== 0 && (o.rackStatus[r] & L.RS_MANUAL_ISOLATE) === 0));
  return wet.length === 0 ? null : `a leak in the pod (${wet.join(", ")})`;
}

/** Why rack `r` (its loop `loop`) is in an interlock that forbids a test, in words; null: none. */
export function rackInterlock(o: StrokeOutputs, r: number, loop: number, name: string): string | null {
  const st = o.rackStatus[r];
  if (o.rackState[r] !== L.RACK_NORMAL || (st & (L.RS_MANUAL_ISOLATE | L.RS_VALVES_CLOSED)) !== 0 || o.rackSupplyOpen[r] === 0 || o.rackReturnOpen[r] === 0) return `${name} is isolated`;
  if ((st & L.RS_LEAK_SENSOR_FAULT) !== 0) return `${name} has a faulty leak sensor`;
  if ((st & L.RS_FLOW_BAD) !== 0) return `${name}'s flow reading is bad`;
  const ls = o.loopStatus[loop];
  if ((ls & L.LS_INTERLOCK_LEAK) !== 0) return `${name} is isolated`;
  if ((ls & L.LS_INTERLOCK_FAILSAFE) !== 0) return `${name}'s loop is held in fail-safe (a bad input or command)`;
  return null;
}
