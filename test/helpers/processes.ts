// Child processes that tests start (socat, mbpoll, the CLI): started here, always stopped.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stopProcess, waitFor } from "../../tooling/processes.js";

export { run, stopProcess, waitFor, type RunResult } from "../../tooling/processes.js";

export interface PtyPair {
  a: string;
  b: string;
  stop(): Promise<void>;
}

/** A socat pty pair in raw mode: bytes written to one end come out of the other. */
export async function ptyPair(): Promise<PtyPair> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-pty-"));
  const a = join(dir, "a");
  const b = join(dir, "b");
  const child = spawn("socat", [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: "ignore" });
  await waitFor(() => existsSync(a) && existsSync(b), "socat pty pair");
  // the pair owns its directory (the bench uses it too, outside vitest's temp-dir cleanup)
  return {
    a,
    b,
    stop: async () => {
      await stopProcess(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
