// The HIL runner's hook in the daemon's process (hil/daemon-hooks.ts), behind `daemon:
// end-leak-thread`: loaded with --import, it ends the thread running leak-worker.js on SIGUSR2,
// and nothing else. A child (an ES module, as the daemon is, importing Worker as the agent does)
// runs a leak-worker.js and another worker; each thread writes its letter every 10 ms.
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stopProcess, waitFor } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dirs.js";

const tick = (letter: string): string => `setInterval(() => require("node:fs").writeSync(1, "${letter}"), 10);\n`;

describe("the HIL runner's hook in the daemon's process", () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir("podwarden-daemon-hooks-");
    writeFileSync(join(dir, "leak-worker.js"), tick("l"));
    writeFileSync(join(dir, "control-worker.js"), tick("c"));
    writeFileSync(join(dir, "package.json"), '{ "type": "commonjs" }');
    writeFileSync(
      join(dir, "main.mjs"),
      `import { Worker } from "node:worker_threads";
       import { writeSync } from "node:fs";
       new Worker(new URL("./leak-worker.js", import.meta.url)).on("exit", () => writeSync(1, "X"));
       new Worker(${JSON.stringify(join(dir, "control-worker.js"))});
       setInterval(() => writeSync(1, "m"), 10);`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("ends the leak worker on SIGUSR2, and only it: the process, its main thread and its other worker run on", async () => {
    const hook = pathToFileURL(join(process.cwd(), "dist/hil/daemon-hooks.js")).href;
    const child = spawn(process.execPath, [`--import=${hook}`, join(dir, "main.mjs")], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const count = (c: string, from = 0): number => out.slice(from).split(c).length - 1;
    try {
      await waitFor(() => count("l") > 5 && count("c") > 5 && count("m") > 5, "every thread ticking", 10_000);
      child.kill("SIGUSR2");
      await waitFor(() => out.includes("X"), "the leak worker's exit", 5000);
      const at = out.length;
      await waitFor(() => count("c", at) > 20 && count("m", at) > 20, "the main thread and the other worker ticking on", 10_000);
      expect(count("l", at), "leak-worker ticks after its end").toBe(0);
      // a second one finds no leak thread: it says so, and the process lives on
      child.kill("SIGUSR2");
      await waitFor(() => err.includes("the daemon has no leak thread running"), "the hook saying so", 5000);
      const again = out.length;
      await waitFor(() => count("m", again) > 5, "the main thread ticking on", 5000);
      expect(child.exitCode).toBeNull();
    } finally {
      await stopProcess(child);
    }
  }, 30_000);
});
