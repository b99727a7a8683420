// The hot path's status bits in words: why a loop is in fail-safe, what is wrong with a point,
// what state a rack's isolation and leak detection are in. The one decoder of those bits: the
// supervisor's alarms, the status view, the uplink and the metrics all read them through here.
import * as L from "../hotpath-as/assembly/layout.js";

/** The words of the bits set in `bits`, in the table's order. */
function bitWords(table: readonly (readonly [number, string])[], bits: number): string {
  return table
    .filter(([bit]) => bits & bit)
    .map(([, s]) => s)
    .join(", ");
}

const FAILSAFE_REASONS = [
  [L.LS_PV_BAD, "PV input bad"],
  [L.LS_SP_INVALID, "setpoint invalid"],
  [L.LS_CMD_INVALID, "command invalid"],
] as const;

/** Why a loop with this status word is in fail-safe, in words ("" when it is not). */
export function failsafeReasons(status: number): string {
  return bitWords(FAILSAFE_REASONS, status);
}

const QUALITY_WORDS = [
  [L.Q_NOT_FINITE, "no usable value"],
  [L.Q_RANGE, "out of range"],
  [L.Q_RATE, "changing faster than its rate limit"],
  [L.Q_STALE, "stale"],
  [L.Q_STUCK, "stuck"],
  [L.Q_CABLE_FAULT, "cable fault"],
  [L.Q_NEVER, "never read"],
] as const;

/** The hot path's debounced quality bits of a point, in words. */
export function qualityWords(bits: number): string {
  return bitWords(QUALITY_WORDS, bits);
}

/** A loop held by a fail-safe interlock. */
export const inFailsafe = (loopStatus: number): boolean => (loopStatus & L.LS_INTERLOCK_FAILSAFE) !== 0;

/** Which of a loop's inputs are bad: the PV (its fail-safe), the feed-forward input and the floor's flow input (its degraded modes). */
export const badInputs = (loopStatus: number): { pv: boolean; ff: boolean; flow: boolean } => ({
  pv: (loopStatus & L.LS_PV_BAD) !== 0,
  ff: (loopStatus & L.LS_FF_BAD) !== 0,
  flow: (loopStatus & L.LS_FLOW_FLOOR_LOST) !== 0,
});

/**
 * What a loop still in control has lost to a bad secondary input, in words ("why" names the
 * input and its fault where the caller knows it): [] when it has lost nothing.
 */
export function degradedWords(loopStatus: number, ffWhy?: string, flowWhy?: string): string[] {
  const bad = badInputs(loopStatus);
  const out: string[] = [];
  if (bad.ff) out.push(`feed-forward dropped, PID on its PV alone (${ffWhy ?? "feed-forward input bad"})`);
  if (bad.flow) out.push(`minimum-flow floor dropped, the valve may close to outMin (${flowWhy ?? "flow input bad"})`);
  return out;
}

/** What holds a loop, in one word, highest priority first: LEAK, FAILSAFE, Tuning (a relay autotune), Manual, Override, Auto ("-" before its first tick). */
export function loopModeWord(loopStatus: number): string {
  if (loopStatus & L.LS_INTERLOCK_LEAK) return "LEAK";
  if (loopStatus & L.LS_INTERLOCK_FAILSAFE) return "FAILSAFE";
  if (loopStatus & L.LS_TUNING) return "Tuning";
  if (loopStatus & L.LS_MANUAL) return "Manual";
  if (loopStatus & L.LS_OVERRIDE) return "Override";
  if (loopStatus & L.LS_AUTOMATIC) return "Auto";
  return "-";
}

/** A rack's leak detection is impaired: a cable fault or no valid reading on one of its leak sensors. */
export const leakSensorFault = (rackStatus: number): boolean => (rackStatus & L.RS_LEAK_SENSOR_FAULT) !== 0;

export const ISOLATION_STATES = ["Normal", "Isolating", "Isolated", "Escalated"] as const;
export type IsolationState = (typeof ISOLATION_STATES)[number];

/** A rack's isolation state (the hot path's rack state) in Redfish-style words. */
export function isolationState(rackState: number): IsolationState {
  return ISOLATION_STATES[rackState] ?? "Normal";
}

export type LeakState = "OK" | "Warning" | "Critical";

/** A rack's leak detection as a Redfish LeakDetector state: Critical when latched or wet, Warning on a sensor fault. */
export function leakState(rackState: number, rackStatus: number): LeakState {
  if (rackState !== L.RACK_NORMAL || rackStatus & L.RS_LEAK_WET) return "Critical";
  return rackStatus & L.RS_LEAK_SENSOR_FAULT ? "Warning" : "OK";
}
