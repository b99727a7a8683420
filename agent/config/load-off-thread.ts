// A reload's config, read off the thread that serves the control plane: the daemon's SIGHUP
// reads and validates the new file in a worker thread of its own (load-worker.ts), bounded in
// time and memory, and the running daemon takes the validated object. A 710 KB alias-heavy file
// held the main thread 13.6 s before it was rejected, and every control loop went to fail-safe
// (issue #49); read here, the same file costs the main thread one structured clone of the result.
import { Worker } from "node:worker_threads";
import { ConfigError } from "../../lib/config-file.js";
import { builtWorker } from "../../lib/worker-path.js";
import type { LoadedConfig } from "./load.js";
import type { LoadRequest } from "./load-worker.js";

/** What a reload's read may take: past either, the file is refused as if it were invalid. */
export const RELOAD_READ_LIMITS = {
  /** a valid config reads in tens of ms; a file still being read after this is not one to run */
  deadlineMs: 10_000,
  /** the worker's heap: a few MB for the largest valid pod */
  heapMb: 256,
} as const;

type Answer = { ok: true; loaded: LoadedConfig } | { ok: false; problems: string[] };

/** Reads and validates the config file at `path` in a worker; rejects with a ConfigError saying why not. */
export function loadAgentConfigOffThread(path: string, env: NodeJS.ProcessEnv = process.env, limits: { deadlineMs: number; heapMb: number } = RELOAD_READ_LIMITS): Promise<LoadedConfig> {
  return new Promise((resolve, reject) => {
    const request: LoadRequest = { path, env };
    const worker = new Worker(builtWorker(import.meta.url, "load-worker.js"), { workerData: request, resourceLimits: { maxOldGenerationSizeMb: limits.heapMb } });
    let settled = false;
    const settle = (err: ConfigError | null, loaded?: LoadedConfig): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      void worker.terminate();
      if (err !== null) reject(err);
      else resolve(loaded!);
    };
    const deadline = setTimeout(() => settle(new ConfigError(path, [`not read within ${limits.deadlineMs / 1000} s: a config that takes this long to read is refused`])), limits.deadlineMs);
    worker.once("message", (a: Answer) => settle(a.ok ? null : new ConfigError(path, a.problems), a.ok ? a.loaded : undefined));
    worker.once("error", (err: Error & { code?: string }) =>
      settle(new ConfigError(path, [err.code === "ERR_WORKER_OUT_OF_MEMORY" ? `reading it took more than ${limits.heapMb} MB: refused` : `cannot be read: ${err.message}`])),
    );
    worker.once("exit", (code) => settle(new ConfigError(path, [`its reader stopped (exit ${code}) before it said anything`])));
  });
}
