// Every scenario of the real-time HIL library (configs/hil/real-time/) run as an engineer runs
// it: `podwarden hil run --rig`, the real daemon against the simulator held apart in a process of
// its own, judged by the runner and reported in JUnit. The figures in docs/hil.md and
// docs/safety.md come from these runs; before this file, 27 of the 28 ran only by hand.
//
// The library is split into shards that run at once, each with a simulator, a rig and a pod
// identity of its own (the scenarios mostly wait: a shard's daemon, simulator and runner took a
// third of a core together, 33.6 % read from /proc over 10 s on the 2-core machine); each shard runs its
// scenarios one after another, as the CLI does. A scenario on a serial line runs on a rig with
// one, a socat pty into the simulator's RTU front. A scenario added to the folder joins a shard
// by itself: the shards are made from the folder's listing.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { afterAll, describe, expect, it } from "vitest";
import { demoConfigData } from "../cli/demo-config.js";
import { loadHilScenario } from "../hil/scenario.js";
import { startSimProcess, type SimProcess } from "../tooling/sim-process.js";
import { TEST_POD } from "./helpers/agent.js";
import { ptyPair, stopProcess, type PtyPair } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dirs.js";

const LIBRARY = "configs/hil/real-time";
/** shards run at once: see the lane's figures in docs/hil.md ("In CI") */
const SHARDS = 2;
/** per scenario, beyond its own duration: the daemon's start, the rig's settling, its stop (12 s measured) */
const OVERHEAD_MS = 30_000;

interface Entry {
  file: string;
  name: string;
  durationMs: number;
  /** it needs a rig with a serial line (its steps damage RTU frames) */
  serial: boolean;
}

const entries: Entry[] = readdirSync(LIBRARY)
  .filter((f) => f.endsWith(".yaml"))
  .sort()
  .map((f) => {
    const file = join(LIBRARY, f);
    const s = loadHilScenario(file);
    return { file, name: s.name, durationMs: s.durationMs, serial: /lineNoisePct/.test(readFileSync(file, "utf8")) };
  });

/** Longest first, each to the shard with the least work so far: the lane ends with its slowest shard. */
function shards(list: Entry[], n: number): Entry[][] {
  const out: Entry[][] = Array.from({ length: n }, () => []);
  const work = new Array<number>(n).fill(0);
  for (const e of [...list].sort((a, b) => b.durationMs - a.durationMs || a.file.localeCompare(b.file))) {
    const i = work.indexOf(Math.min(...work));
    out[i].push(e);
    work[i] += e.durationMs + OVERHEAD_MS;
  }
  return out;
}

interface Run {
  code: number | null;
  out: string;
}

function hilRun(files: string[], config: string, rig: string, junit: string): Promise<Run> {
  const child = spawn("node", ["dist/cli/podwarden.js", "hil", "run", ...files, "-c", config, "--rig", rig, "--junit", junit], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, out })));
}

describe("the real-time HIL library, every scenario against the simulator as a rig", () => {
  const started: { sim?: SimProcess; line?: PtyPair }[] = [];

  afterAll(async () => {
    for (const s of started) {
      if (s.sim !== undefined) await stopProcess(s.sim.child, "SIGKILL");
      await s.line?.stop();
    }
  });

  it("is all there: the library's 28 scenarios, each in one shard", () => {
    // a scenario dropped from the folder would otherwise pass by its absence
    expect(entries.length).toBeGreaterThanOrEqual(28);
    const all = shards(entries, SHARDS).flat().map((e) => e.file);
    expect(new Set(all)).toEqual(new Set(entries.map((e) => e.file)));
    expect(all.length).toBe(entries.length);
  });

  const planned = shards(entries, SHARDS);
  for (const [i, shard] of planned.entries()) {
    const timeoutMs = 60_000 + shard.reduce((t, e) => t + e.durationMs + OVERHEAD_MS, 0);
    it.concurrent(
      `shard ${i + 1}: ${shard.map((e) => e.name).join(", ")}`,
      async () => {
        const dir = tempDir(`podwarden-hil-lib-${i + 1}-`);
        const own: { sim?: SimProcess; line?: PtyPair } = {};
        started.push(own);
        const serial = shard.filter((e) => e.serial);
        // the library's plant (configs/sim-pod.yaml) on ports of its own, and on a serial line too
        // where a scenario of this shard needs one (Modbus RTU, by unit id)
        const simPod = parse(readFileSync("configs/sim-pod.yaml", "utf8")) as { plant: Record<string, unknown>; devices: { leaseMs: number } };
        if (serial.length > 0) own.line = await ptyPair();
        own.sim = await startSimProcess(dir, simPod.devices.leaseMs, undefined, simPod.plant, own.line === undefined ? {} : { rtu: { path: own.line.b, baudRate: 115200 } });
        const sim = own.sim;
        // configs/hil/rigs/sim-pod.yaml and sim-pod-rtu.yaml, on this simulator's ports
        const tcpRig = parse(readFileSync("configs/hil/rigs/sim-pod.yaml", "utf8")) as { devices: Record<string, Record<string, unknown>>; truth: { url: string }; faults: unknown; clear: unknown };
        for (const [name, d] of Object.entries(tcpRig.devices)) d.port = sim.ports[name];
        tcpRig.truth = { url: `${sim.controlUrl}/truth` };
        tcpRig.faults = { default: { http: { url: `${sim.controlUrl}/fault` } } };
        tcpRig.clear = { http: { url: `${sim.controlUrl}/clear` } };
        const rigFile = join(dir, "rig.yaml");
        writeFileSync(rigFile, stringify(tcpRig));
        // the demo pod under an identity of this shard's own: a running demo keeps its own
        const data = demoConfigData();
        data.pod = `${TEST_POD}-hil-lib-${i + 1}`;
        const config = join(dir, "agent.yaml");
        writeFileSync(config, stringify(data));

        const runs: { files: Entry[]; rig: string }[] = [{ files: shard.filter((e) => !e.serial), rig: rigFile }];
        if (own.line !== undefined) {
          const rtuRig = { ...tcpRig, name: "simulator-rtu", devices: { ...tcpRig.devices, "rack-2": { serial: { path: own.line.a, baudRate: 115200 }, unitId: tcpRig.devices["rack-2"].unitId } } };
          const rtuFile = join(dir, "rig-rtu.yaml");
          writeFileSync(rtuFile, stringify(rtuRig));
          runs.push({ files: serial, rig: rtuFile });
        }
        for (const [k, r] of runs.entries()) {
          if (r.files.length === 0) continue;
          const junit = join(dir, `hil-${k}.xml`);
          const { code, out } = await hilRun(
            r.files.map((e) => e.file),
            config,
            r.rig,
            junit,
          );
          // the runner's own words for every scenario, a failure's reasons with them
          expect(code, out).toBe(0);
          for (const e of r.files) expect(out, out).toMatch(new RegExp(`^PASS ${e.name} \\(`, "m"));
          const xml = readFileSync(junit, "utf8");
          expect(xml).toMatch(/<testsuites name="podwarden hil" tests="\d+" failures="0" errors="0" skipped="0">/);
          expect(xml.match(/<testsuite /g)?.length).toBe(r.files.length);
        }
        await stopProcess(sim.child, "SIGKILL");
        await own.line?.stop();
        own.sim = undefined;
        own.line = undefined;
      },
      timeoutMs,
    );
  }
});
