// The HIL runner's `daemon: stall-main` (hil/main-thread-stall.ts): strace holds a process's main
// thread and no other. A child's main thread and its worker each print a tick every 10 ms, the
// worker straight to fd 1 (a worker's process.stdout goes through the main thread): held, the
// main thread's ticks stop and the worker's go on; let go, the main thread's come back.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { stallMainThread } from "../hil/main-thread-stall.js";
import { stopProcess, waitFor } from "./helpers/processes.js";

const CHILD = `
const { Worker } = require("node:worker_threads");
new Worker('setInterval(() => require("node:fs").writeSync(1, "w\\\\n"), 10)', { eval: true });
setInterval(() => require("node:fs").writeSync(1, "m\\n"), 10);
`;

describe("a process's main thread held still", () => {
  it("stops its main thread's turns while its worker runs on, and lets it go on", async () => {
    const child = spawn(process.execPath, ["-e", CHILD], { stdio: ["ignore", "pipe", "inherit"] });
    const seen = { m: 0, w: 0 };
    child.stdout.on("data", (d: Buffer) => {
      for (const c of d.toString()) if (c === "m" || c === "w") seen[c]++;
    });
    try {
      await waitFor(() => seen.m > 5 && seen.w > 5, "both threads ticking");
      const stall = await stallMainThread(child.pid as number);
      // a tick already past its wait may still land: count from the next one
      await new Promise((r) => setTimeout(r, 100));
      const held = { ...seen };
      await waitFor(() => seen.w > held.w + 30, "the worker ticking on while the main thread is held", 10_000);
      expect(seen.m - held.m, "main-thread ticks while held").toBe(0);
      expect(await stall.release()).toMatch(/^the main thread held \d+\.\d{2} s$/);
      const after = seen.m;
      await waitFor(() => seen.m > after + 5, "the main thread ticking again");
    } finally {
      await stopProcess(child);
    }
  }, 30_000);

  it("says why when it cannot hold one: no such process", async () => {
    await expect(stallMainThread(2 ** 22 + 12345)).rejects.toThrow(/stall-main: strace could not attach to \d+/);
  });
});
