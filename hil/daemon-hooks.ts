// Loaded into the daemon under test by the HIL runner (node --import, through NODE_OPTIONS) for a
// scenario with a `daemon: end-leak-thread` step, and into no other process: it lets the runner
// end the daemon's leak thread from outside, as a crash of that thread would, while the rest of
// the process runs on. A signal cannot (every signal but SIGUSR1 acts on the whole process, and
// SIGUSR1 starts the inspector); nor can ptrace, whose injected faults in one thread end the
// whole process once libuv or V8 aborts on them. So the hook keeps a handle on every Worker the
// daemon makes, and on SIGUSR2 terminates the one running agent/control/leak-worker.js: its exit,
// not asked for by the agent, is what the agent's `leak-thread` alarm and restart answer.
import { createRequire, syncBuiltinESMExports } from "node:module";
import type * as WorkerThreads from "node:worker_threads";
import type { Worker } from "node:worker_threads";

const threads = createRequire(import.meta.url)("node:worker_threads") as typeof WorkerThreads;

/** The file the leak thread runs (lib/worker-path.ts builds its URL or path). */
const LEAK_WORKER = /[/\\]leak-worker\.js$/;

type WorkerArgs = ConstructorParameters<typeof threads.Worker>;
const live = new Set<Worker>();
const Original = threads.Worker;

class TrackedWorker extends Original {
  constructor(...args: WorkerArgs) {
    super(...args);
    const file = args[0] instanceof URL ? args[0].pathname : String(args[0]);
    if (!LEAK_WORKER.test(file)) return;
    live.add(this);
    this.once("exit", () => live.delete(this));
  }
}

// The builtin module's ESM exports follow its CommonJS object once synced, so the agent's
// `import { Worker } from "node:worker_threads"`, evaluated after this preload, gets the wrapper.
threads.Worker = TrackedWorker;
syncBuiltinESMExports();

process.on("SIGUSR2", () => {
  if (live.size === 0) {
    process.stderr.write("hil daemon hook: end-leak-thread: the daemon has no leak thread running\n");
    return;
  }
  for (const w of live) void w.terminate();
});
