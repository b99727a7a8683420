// SCHED_FIFO for the calling thread only, for the threads a busy host must not delay: the
// control worker and the leak thread; and a nice value for one thread that must come before the
// service plane but does JavaScript work in bursts (the control plane's thread). Node has no API
// for either: chrt or renice on our own thread id, which needs CAP_SYS_NICE (or root). Neither
// FIFO thread spins, and the kernel's real-time throttling (95 % of each second by default)
// leaves the rest of the host its share even if one did.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

/**
 * Runs `cmd` with `args` and this thread's id last; null when it succeeded, else why not, as
 * "<what> refused (...)" or "<what> not available (...)", then `fallback`.
 */
function onThisThread(cmd: string, args: string[], what: string, fallback: string): string | null {
  try {
    const tid = readFileSync("/proc/thread-self/stat", "utf8").split(" ")[0];
    const r = spawnSync(cmd, [...args, tid], { encoding: "utf8", timeout: 2000 });
    if (r.status === 0) return null;
    return `${what} refused (${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}); ${fallback}`;
  } catch (err) {
    return `${what} not available (${(err as Error).message}); ${fallback}`;
  }
}

/** Raises this thread to SCHED_FIFO at `priority`; null when done, else why not. */
export function raiseThreadToFifo(priority: number): string | null {
  return onThisThread("chrt", ["-f", "-p", String(priority)], "SCHED_FIFO", "running at normal priority");
}

/**
 * Sets this thread's nice value (Linux keeps one per thread); null when done, else why not.
 * For a thread that must come before the service plane without SCHED_FIFO: a FIFO thread that
 * runs JavaScript for a second (an agent's start, a structural reload) uses up the kernel's
 * real-time share on its CPU, and the kernel then throttles every FIFO thread there, the control
 * worker with it, for the rest of the period: 50 ms without a tick (measured 2026-12-05: the HIL
 * library's device-exception-rack-6 raised control:stalled 1 run in 5 with the control plane's
 * thread at FIFO, none in 6 at nice -10).
 */
export function niceThread(nice: number): string | null {
  return onThisThread("renice", ["-n", String(nice), "-p"], `nice ${nice}`, "running at nice 0");
}
