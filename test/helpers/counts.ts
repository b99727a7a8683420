// How many cases a fuzzer generates, or how many times a stress test repeats its fault: the full
// count under `npm run soak -- --full-counts` (FULL_COUNTS=1), a sixth of it in `npm test`, whose
// 15-minute budget the full counts outgrew on the 2-core machine (a third fitted until the fleet's
// clustered-broker tests came). A fuzzer's regression corpus is
// replayed in full either way, and a failure names its seed to rerun.

export function fullCount(full: number): number {
  return process.env.FULL_COUNTS === "1" ? full : Math.ceil(full / 6);
}

/** A count in words for a test's name: 33,334. */
export const countWords = (n: number): string => n.toLocaleString("en-US");
