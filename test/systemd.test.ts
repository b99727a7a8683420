// systemd integration: the unit verifies, and the notify protocol against a real NOTIFY_SOCKET
// (an AF_UNIX datagram listener): READY=1 after start, WATCHDOG=1 only while healthy, STOPPING=1;
// and with the control worker gone, /healthz and /readyz at 503 and no more pings.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SystemdNotifier } from "../agent/ops/systemd.js";
import { shebangNodeFlags } from "../tooling/node-flags.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { startDaemon, untilRunning } from "./helpers/daemon.js";
import { run, stopProcess, waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

interface Listener {
  datagrams: string[];
  path: string;
  child: ChildProcess;
}

async function notifySocket(): Promise<Listener> {
  const path = join(tempDir("podwarden-notify-"), "notify.sock");
  const child = spawn("/usr/bin/python3", ["test/peers/notify_listener.py", path], { stdio: ["ignore", "pipe", "inherit"] });
  const datagrams: string[] = [];
  let ready = false;
  child.stdout.on("data", (d: Buffer) => {
    for (const line of d.toString().split("\n")) {
      if (line === "ready") ready = true;
      else if (line !== "") datagrams.push(line);
    }
  });
  await waitFor(() => ready, "notify listener");
  return { datagrams, path, child };
}

describe("systemd", () => {
  it("the unit passes systemd-analyze verify", async () => {
    const r = await run("systemd-analyze", ["verify", "deploy/podwarden.service"]);
    expect(r.stderr.trim()).toBe("");
    expect(r.code).toBe(0);
  });

  it("lets the daemon open the usual on-board, USB and HAT serial ports, and no other device", () => {
    const unit = readFileSync("deploy/podwarden.service", "utf8");
    expect(unit).toMatch(/^DevicePolicy=closed$/m);
    const allowed = [...unit.matchAll(/^DeviceAllow=char-(\S+) rw$/gm)].map((m) => m[1]);
    expect(allowed.sort()).toEqual(["ttyACM", "ttyAMA", "ttyLP", "ttyO", "ttyS", "ttySC", "ttyTHS", "ttyUSB", "ttymxc"].sort());
  });

  it("the build leaves the CLI executable, so run as a command it starts node with its shebang's flags", async () => {
    expect(statSync("dist/cli/podwarden.js").mode & 0o111, "execute bits").toBe(0o111);
    const r = await run("./dist/cli/podwarden.js", ["--version"]);
    expect(r.code).toBe(0);
    // the version and the commit the build was made from (issue #51)
    const head = (await run("git", ["rev-parse", "HEAD"])).stdout.trim();
    expect(r.stdout.trim()).toMatch(new RegExp(`^podwarden \\d+\\.\\d+\\.\\d+ \\(commit ${head}(-dirty)?\\)$`));
    expect(shebangNodeFlags(readFileSync("dist/cli/podwarden.js", "utf8"))).toEqual(shebangNodeFlags(readFileSync("cli/podwarden.ts", "utf8")));
  });

  it("the unit starts node with the CLI's own flags (its shebang)", () => {
    const flags = shebangNodeFlags(readFileSync("cli/podwarden.ts", "utf8"));
    expect(flags).toContain("--max-semi-space-size=1");
    const execStart = /^ExecStart=(.*)$/m.exec(readFileSync("deploy/podwarden.service", "utf8"))?.[1];
    expect(execStart).toBe(`/usr/bin/env node ${flags.join(" ")} /opt/podwarden/dist/cli/podwarden.js run -c /etc/podwarden/pod.yaml`);
    expect(() => shebangNodeFlags("#!/usr/bin/env node\n")).toThrow(/not a/);
  });

  it("sends WATCHDOG=1 only while the health gate is open", async () => {
    const l = await notifySocket();
    try {
      let healthy = true;
      const n = new SystemdNotifier({ NOTIFY_SOCKET: l.path, WATCHDOG_USEC: "200000" });
      n.startWatchdog(() => healthy);
      await waitFor(() => l.datagrams.filter((d) => d === "WATCHDOG=1").length >= 3, "watchdog pings");
      healthy = false;
      await new Promise((r) => setTimeout(r, 300)); // let pings already on their way land
      const frozen = l.datagrams.filter((d) => d === "WATCHDOG=1").length;
      await new Promise((r) => setTimeout(r, 600));
      expect(l.datagrams.filter((d) => d === "WATCHDOG=1").length).toBe(frozen);
      n.stop();
      expect(new SystemdNotifier({}).enabled).toBe(false);
    } finally {
      await stopProcess(l.child);
    }
  });

  describe("the daemon under a NOTIFY_SOCKET", () => {
    let t: TestSim;
    beforeAll(async () => {
      t = await startTestSim();
    });
    afterAll(async () => {
      await t.stop();
    });

    it("sends READY=1 once running, WATCHDOG=1 while healthy, STOPPING=1 on SIGTERM", async () => {
      const l = await notifySocket();
      const cfg = join(tempDir("podwarden-sd-"), "agent.yaml");
      writeFileSync(
        cfg,
        stringify(
          demoConfigFor(t.sim, (c) => {
            c.pod = TEST_POD;
            c.metrics = { port: 0 };
          }),
        ),
      );
      const d = spawn("node", ["dist/cli/podwarden.js", "run", "-c", cfg], { stdio: "ignore", env: { ...process.env, NOTIFY_SOCKET: l.path, WATCHDOG_USEC: "400000" } });
      try {
        await waitFor(() => l.datagrams.includes("READY=1"), "READY=1", 30_000);
        await waitFor(() => l.datagrams.filter((x) => x === "WATCHDOG=1").length >= 2, "watchdog", 10_000);
        d.kill("SIGTERM");
        await waitFor(() => l.datagrams.includes("STOPPING=1"), "STOPPING=1", 10_000);
        expect(await new Promise((r) => d.once("exit", r))).toBe(0);
      } finally {
        await stopProcess(d, "SIGKILL");
        await stopProcess(l.child);
      }
    }, 60_000);

    it("with its control worker gone (its ticks stop, as a stalled worker's do): /healthz and /readyz answer 503, and the WATCHDOG=1 pings stop", async () => {
      const l = await notifySocket();
      const cfg = join(tempDir("podwarden-sd-"), "agent.yaml");
      writeFileSync(cfg, stringify(demoConfigFor(t.sim, (c) => ((c.pod = TEST_POD), (c.metrics = { port: 0 })))));
      // the HIL runner's hook ends the control worker on SIGUSR2 (hil/daemon-hooks.ts)
      const hook = pathToFileURL(join(process.cwd(), "dist/hil/daemon-hooks.js")).href;
      const d = startDaemon(cfg, { nodeFlags: [`--import=${hook}`], env: { NOTIFY_SOCKET: l.path, WATCHDOG_USEC: "400000", PODWARDEN_HOOK_END: "control" } });
      try {
        await untilRunning(d);
        const port = (d.lines.find((x) => x.msg === "metrics and health on /metrics, /healthz, /readyz") as { port: number }).port;
        const status = async (path: string): Promise<number> => (await fetch(`http://127.0.0.1:${port}${path}`)).status;
        await waitFor(async () => (await status("/readyz")) === 200, "ready", 30_000);
        expect(await status("/healthz")).toBe(200);
        await waitFor(() => l.datagrams.filter((x) => x === "WATCHDOG=1").length >= 2, "watchdog", 10_000);
        d.child.kill("SIGUSR2");
        await waitFor(async () => (await status("/healthz")) === 503, "/healthz 503", 10_000);
        expect(await status("/readyz")).toBe(503);
        const pings = l.datagrams.filter((x) => x === "WATCHDOG=1").length;
        // ten of the watchdog's periods (WATCHDOG_USEC/2): a healthy daemon pings in each
        await new Promise((r) => setTimeout(r, 2000));
        expect(l.datagrams.filter((x) => x === "WATCHDOG=1").length).toBe(pings);
        expect(await status("/healthz")).toBe(503);
      } finally {
        await stopProcess(d.child, "SIGKILL");
        await stopProcess(l.child);
      }
    }, 60_000);
  });
});
