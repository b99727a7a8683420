// Loaded into the daemon under test by the HIL runner (node --import, through NODE_OPTIONS) for a
// scenario with a `daemon: end-leak-thread` step, and by test/systemd.test.ts (which ends the
// control worker with it), and into no other process: it lets the runner
// end the daemon's leak thread from outside, as a crash of that thread would, while the rest of
// the process runs on. A signal cannot (every signal but SIGUSR1 acts on the whole process, and
// SIGUSR1 starts the inspector); nor can ptrace, whose injected faults in one thread end the
// whole process once libuv or V8 aborts on them. So the hook keeps a handle on every Worker the
// daemon makes, and on SIGUSR2 terminates the one running agent/control/leak-worker.js: its exit,
// not asked for by the agent, is what the agent's `leak-thread` alarm and restart answer. The
// leak thread is started by the control plane's thread (agent/plane/), where this hook is loaded
// too (a preload runs in every worker) but where no signal arrives: the main thread passes the
// signal on over a BroadcastChannel, and each thread ends the leak threads it started.
import { createRequire, syncBuiltinESMExports } from "node:module";
import type * as WorkerThreads from "node:worker_threads";
import type { Worker } from "node:worker_threads";

const threads = createRequire(import.meta.url)("node:worker_threads") as typeof WorkerThreads;

/** The file the leak thread runs (lib/worker-path.ts builds its URL or path). */
const LEAK_WORKER = /[/\\]leak-worker\.js$/;
/**
 * The control worker's file. With PODWARDEN_HOOK_END=control in the daemon's environment, SIGUSR2
 * ends it instead of the leak thread: its ticks stop, as a stalled worker's do, and the health
 * gate (/healthz, /readyz, the systemd watchdog) must close on that (test/systemd.test.ts).
 */
const CONTROL_WORKER = /[/\\]control[/\\]worker\.js$/;
const TARGET = process.env.PODWARDEN_HOOK_END === "control" ? CONTROL_WORKER : LEAK_WORKER;

type WorkerArgs = ConstructorParameters<typeof threads.Worker>;
const live = new Set<Worker>();
const Original = threads.Worker;

/**
 * With PODWARDEN_HOOK_FAIL_START=control or leak, the first such thread the daemon makes ends
 * before its first message, as a thread whose start throws does: what the daemon does when a
 * subsystem cannot start (test/agent-daemon.test.ts).
 */
const FAIL_START = process.env.PODWARDEN_HOOK_FAIL_START === "control" ? CONTROL_WORKER : process.env.PODWARDEN_HOOK_FAIL_START === "leak" ? LEAK_WORKER : null;
let failedOne = false;

class TrackedWorker extends Original {
  constructor(...args: WorkerArgs) {
    super(...args);
    const file = args[0] instanceof URL ? args[0].pathname : String(args[0]);
    if (FAIL_START?.test(file) === true && !failedOne) {
      failedOne = true;
      void this.terminate();
      return;
    }
    if (!TARGET.test(file)) return;
    live.add(this);
    this.once("exit", () => live.delete(this));
  }
}

// The builtin module's ESM exports follow its CommonJS object once synced, so the agent's
// `import { Worker } from "node:worker_threads"`, evaluated after this preload, gets the wrapper.
threads.Worker = TrackedWorker;
syncBuiltinESMExports();

/** Ends the leak threads this thread started; how many. */
const endLeakThreads = (): number => {
  const n = live.size;
  for (const w of live) void w.terminate();
  return n;
};
const channel = new threads.BroadcastChannel("podwarden-hil-daemon-hooks");
channel.unref();
let ended = 0;
channel.onmessage = (m: unknown) => {
  const msg = (m as { data: { t: string; n?: number } }).data;
  if (msg.t === "end") channel.postMessage({ t: "ended", n: endLeakThreads() });
  else if (msg.t === "ended") ended += msg.n ?? 0;
};
if (threads.isMainThread) {
  process.on("SIGUSR2", () => {
    ended = endLeakThreads();
    channel.postMessage({ t: "end" });
    // every thread answers at once; one that has none to end answers 0
    setTimeout(() => {
      if (ended === 0) process.stderr.write("hil daemon hook: end-leak-thread: the daemon has no leak thread running\n");
    }, 500).unref();
  });
}
