// SCHED_FIFO for the calling thread only, for the threads a busy host must not delay: the
// control worker and the leak thread. Node has no API for it: chrt on our own thread id, which
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
