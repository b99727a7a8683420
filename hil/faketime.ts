// libfaketime (Debian's faketime package), for a process whose wall clock must move while it runs:
// preloaded with a timestamp file read on every call, it gives the process the true time shifted
// by the file's offset (+1d, -2h, +0), and leaves CLOCK_MONOTONIC true, as when NTP or an operator
// sets the time. The HIL runner's `clock` steps and the clock-jump test use it.
import { existsSync, writeFileSync } from "node:fs";

/** Where Debian and others install it. */
const LIBS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1"];

/** The library's path, or undefined when it is not installed. */
export const libfaketime = (): string | undefined => LIBS.find((f) => existsSync(f));

/** An offset as libfaketime's timestamp file takes it: a sign, a number, a unit (s, m, h, d, y). */
export const FAKETIME_OFFSET = /^[+-]\d{1,7}(\.\d{1,3})?[smhdy]?$/;

/**
 * The environment that runs a process on the wall clock `clockFile` says (written here at "+0"),
 * or throws when libfaketime is not installed.
 */
export function fakeClockEnv(clockFile: string): Record<string, string> {
  const lib = libfaketime();
  if (lib === undefined) throw new Error("a moving wall clock needs libfaketime (Debian package faketime), not found in " + LIBS.join(", "));
  writeFileSync(clockFile, "+0\n");
  // no cache: the file is read on every call, so a step moves the clock at once.
  // FORCE_MONOTONIC_FIX=0: left on, libfaketime's own pthread_cond_timedwait for monotonic
  // condition variables kept the daemon's SCHED_FIFO control worker busy: the daemon took 1.1
  // cores (95 % on the worker) against 0.16 without libfaketime, and 0.18 with the fix off
  // (the demo pod, 3 s of /proc/<pid>/stat, 2026-12-04), starving everything else on 2 cores
  return { LD_PRELOAD: lib, FAKETIME_TIMESTAMP_FILE: clockFile, FAKETIME_NO_CACHE: "1", FAKETIME_DONT_FAKE_MONOTONIC: "1", FAKETIME_FORCE_MONOTONIC_FIX: "0" };
}

/** Moves the clock of a process started with fakeClockEnv(clockFile). */
export function setFakeClock(clockFile: string, offset: string): void {
  if (!FAKETIME_OFFSET.test(offset)) throw new Error(`clock ${offset}: an offset is +<n> or -<n> with s, m, h, d or y`);
  writeFileSync(clockFile, `${offset}\n`);
}
