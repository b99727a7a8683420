// The monotonic clock for everything in control and timeouts: CLOCK_MONOTONIC in ms.
// process.hrtime is the same clock in every thread (performance.now() is not: each worker has
// its own time origin), so point timestamps from the drivers and tick times in the control
// worker can be compared. Wall-clock time is only for what people and mission control read.
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
