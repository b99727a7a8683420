// The real programs as tests and benchmarks start them: the podwarden CLI with the daemon's
// production node flags (its shebang's), and the simulator in a process of its own, so that
// nothing the process under test does (a blocked main thread, a garbage collection) stalls the
// plant it is measured against.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { shebangNodeFlags } from "./node-flags.js";

export const DAEMON_NODE_FLAGS = shebangNodeFlags(readFileSync("dist/cli/podwarden.js", "utf8"));

/** `podwarden <args>` in its own process (`node dist/cli/podwarden.js`), with the shebang's production flags. */
export function podwardenProcess(args: string[], stdout: "ignore" | "pipe"): ChildProcess {
  return spawn("node", [...DAEMON_NODE_FLAGS, "dist/cli/podwarden.js", ...args], { stdio: ["ignore", stdout, "inherit"] });
}

export interface SimProcess {
  child: ChildProcess;
  controlUrl: string;
  ports: Record<string, number>;
}

/**
 * The simulator in its own process. `fifoPriority`: run it at SCHED_FIFO (needs root), for
 * benches that measure at the device: a real device answers on its own hardware, while the
 * simulator shares the host's cores with the daemon under test and, at normal priority, waits
 * behind it and the load generators (BENCHMARKS.md, "Leak-to-isolation under input load").
 */
export async function startSimProcess(
  dir: string,
  leaseMs: number,
  fifoPriority?: number,
  plant: Record<string, unknown> = { load: { profile: "idle", pct: 60 } },
  /** more `devices` keys (say, `redfish: {}` for a BMC per rack) */
  devices: Record<string, unknown> = {},
): Promise<SimProcess> {
  const cfg = join(dir, "sim.yaml");
  writeFileSync(cfg, stringify({ plant, devices: { basePort: 0, leaseMs, ...devices }, control: { port: 0 } }));
  // the CLI's own flags, as `podwarden sim` runs: with node's default 16 MB semi-spaces the
  // simulator's scavenges paused its answers for up to 6 ms, a stall no field device has
  const child = podwardenProcess(["sim", "-c", cfg], "pipe");
  if (fifoPriority !== undefined) {
    // every thread it has now; those it starts later inherit the policy
    const r = spawnSync("chrt", ["-f", "-a", "-p", String(fifoPriority), String(child.pid)], { encoding: "utf8" });
    if (r.status !== 0) {
      child.kill("SIGKILL");
      throw new Error(`simulator at SCHED_FIFO refused: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}`);
    }
  }
  let out = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  const t0 = Date.now();
  while (!/control\s+http:\/\/127\.0\.0\.1:\d+/.test(out)) {
    if (Date.now() - t0 > 20000) throw new Error("simulator did not start");
    await new Promise((r) => setTimeout(r, 20));
  }
  const ports: Record<string, number> = {};
  for (const m of out.matchAll(/^\s+(\S+)\s+modbus tcp 127\.0\.0\.1:(\d+)/gm)) ports[m[1]] = Number(m[2]);
  // a rack's BMC, as PodSim.portOf names it
  for (const m of out.matchAll(/^\s+(\S+)\s+redfish https? 127\.0\.0\.1:(\d+)/gm)) ports[`${m[1]}.bmc`] = Number(m[2]);
  return { child, ports, controlUrl: `http://127.0.0.1:${/control\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1]}` };
}


/** Waits until a daemon holds every simulated device's lease (it has taken them all), up to `timeoutMs`. */
export async function devicesTaken(sim: SimProcess, timeoutMs = 30_000): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const truth = (await (await fetch(`${sim.controlUrl}/truth`)).json()) as { devices: { leaseExpired: boolean }[] };
    if (truth.devices.every((d) => !d.leaseExpired)) return;
    if (Date.now() - t0 > timeoutMs) throw new Error("daemon did not take its devices");
    await new Promise((r) => setTimeout(r, 100));
  }
}
