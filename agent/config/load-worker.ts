// The worker thread a reload reads the config file in (load-off-thread.ts): YAML, ${ENV}, the
// schema and the cross-checks, all of loadAgentConfig, then the validated config back by
// structured clone. It runs at the lowest CPU priority, so that a file that takes seconds to read
// takes them from idle time.
import { readFileSync } from "node:fs";
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import { ConfigError } from "../../lib/config-file.js";
import { loadAgentConfig } from "./load.js";

export interface LoadRequest {
  path: string;
  env: NodeJS.ProcessEnv;
}

try {
  // nice 19 for this thread alone: Linux takes a thread id where it asks for a process id
  setPriority(Number(readFileSync("/proc/thread-self/stat", "utf8").split(" ")[0]), 19);
} catch {
  // not on Linux: the deadline still bounds it
}
const { path, env } = workerData as LoadRequest;
try {
  parentPort?.postMessage({ ok: true, loaded: loadAgentConfig(path, env) });
} catch (err) {
  parentPort?.postMessage({ ok: false, problems: err instanceof ConfigError ? [...err.problems] : [(err as Error).message] });
}
