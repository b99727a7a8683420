// Holds one process's main thread still while its other threads run on: the HIL runner's
// `daemon: stall-main`, a daemon whose event loop is busy (a long parse, a long collection)
// while its leak thread and control worker are not. A signal cannot do it (SIGSTOP stops every
// thread of a process); ptrace can stop one thread, and strace (Debian's strace package, which
// the tests already use) attaches to the one thread whose id is the process id, the main thread,
// and holds it at its next epoll wait, the turn of its event loop, until strace is stopped. Its
// other threads are not traced, so not slowed. strace, killed, detaches, and the thread goes on.
import { spawn } from "node:child_process";

/** The calls libuv waits in, one of which the main thread enters at every turn of its loop. */
const LOOP_WAITS = "epoll_wait,epoll_pwait,epoll_pwait2";
/** A delay no stall outlasts (an hour, in µs): the stall ends when strace is stopped. */
const HOLD_US = 3_600_000_000;
/** How long strace may take to attach before the stall is given up. */
const ATTACH_TIMEOUT_MS = 5000;

export interface MainThreadStall {
  /** lets the thread go on; resolves to how long it was held, in words */
  release(): Promise<string>;
}

/** Holds `pid`'s main thread at its next event-loop wait; resolves once strace has attached. */
export async function stallMainThread(pid: number): Promise<MainThreadStall> {
  const started = performance.now();
  const child = spawn("strace", ["-p", String(pid), "-e", `trace=${LOOP_WAITS}`, "-e", `inject=${LOOP_WAITS}:delay_enter=${HOLD_US}:when=1`, "-o", "/dev/null"], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`stall-main: strace did not attach to ${pid} in ${ATTACH_TIMEOUT_MS} ms: ${err.trim() || "(no output)"}`));
    }, ATTACH_TIMEOUT_MS);
    child.once("error", (e) => {
      clearTimeout(t);
      reject(new Error(`stall-main: strace could not start (Debian's strace package): ${e.message}`));
    });
    child.stderr.on("data", (d: Buffer) => {
      err = (err + d.toString()).slice(-2000);
      // strace says so once it holds the thread: "strace: Process <pid> attached"
      if (err.includes(`Process ${pid} attached`)) {
        clearTimeout(t);
        resolve();
      } else if (/attach: ptrace|Operation not permitted|No such process/.test(err)) {
        clearTimeout(t);
        reject(new Error(`stall-main: strace could not attach to ${pid}: ${err.trim()}`));
      }
    });
  });
  return {
    release: async () => {
      // on SIGINT strace detaches from the thread, which leaves its wait and goes on
      child.kill("SIGINT");
      const t = setTimeout(() => child.kill("SIGKILL"), ATTACH_TIMEOUT_MS);
      await exited;
      clearTimeout(t);
      return `the main thread held ${((performance.now() - started) / 1000).toFixed(2)} s`;
    },
  };
}
