// A reading as the supervisor's rules take it: the value, the hot path's verdict on it, and
// when bad, why. One shape for the supervisor and the rules it hands readings to.
export interface Reading {
  value: number;
  /** the hot path's debounced quality is good */
  good: boolean;
  /** when not good: which point, and why, in words (the alarms name it) */
  why?: string;
  /** when not good: it did not arrive (its driver's quality a comms fault, or never reported), as against arriving unusable */
  comms?: boolean;
}
