// SCHED_FIFO for the calling thread only, for the threads a busy host must not delay: the
// control worker and the leak thread; and a nice value for one thread that must come before the
// service plane but does JavaScript work in bursts (the control plane's thread). Node has no API for it: chrt on our own thread id, which
// needs CAP_SYS_NICE (or root). Neither thread spins, and the kernel's real-time throttling
// (95 % of each second by default) leaves the rest of the host its share even if one did.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** Raises this thread to SCHED_FIFO at `priority`; null when done, else why not. */
export function raiseThreadToFifo(priority: number): string | null {
  try {
    const tid = readFileSync("/proc/thread-self/stat", "utf8").split(" ")[0];
    const r = spawnSync("chrt", ["-f", "-p", String(priority), tid], { encoding: "utf8", timeout: 2000 });
    if (r.status === 0) return null;
    return `SCHED_FIFO refused (${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}); running at normal priority`;
  } catch (err) {
    return `SCHED_FIFO not available (${(err as Error).message}); running at normal priority`;
  }
}

/**
 * Sets this thread's nice value (Linux keeps one per thread); null when done, else why not.
 * For a thread that must come before the service plane without SCHED_FIFO: a FIFO thread that
 * runs JavaScript for a second (an agent's start, a structural reload) uses up the kernel's
 * real-time share on its CPU, and the kernel then throttles every FIFO thread there, the control
 * worker with it, for the rest of the period: 50 ms without a tick (measured 2026-12-05: the HIL
 * library's device-exception-rack-6 raised control:stalled 1 run in 5 with the control plane's
 * thread at FIFO, none in 10 at nice -10).
 */
export function niceThread(nice: number): string | null {
  try {
    const tid = readFileSync("/proc/thread-self/stat", "utf8").split(" ")[0];
    const r = spawnSync("renice", ["-n", String(nice), "-p", tid], { encoding: "utf8", timeout: 2000 });
    if (r.status === 0) return null;
    return `nice ${nice} refused (${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}); running at nice 0`;
  } catch (err) {
    return `nice not available (${(err as Error).message}); running at nice 0`;
  }
}
