// Long-run memory of the daemon: `podwarden run` (production flags) on the 8-rack demo pod
// against the simulator in its own process, RSS sampled every 10 s for N minutes. The bench's
// 30-s figure says how much the daemon needs; this says whether it keeps needing more.
// Run by `npm run soak -- --daemon-rss --minutes N`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { podwardenProcess, startSimProcess } from "../tooling/sim-process.js";
import { demoConfigWithPorts, processRssMb } from "./agent.js";
import { fmt, leastSquaresSlope } from "./stats.js";

export interface DaemonRssReport {
  minutes: number;
  /** [minutes since start, daemon RSS MB] */
  samples: [number, number][];
  maxMb: number;
  slopeMbPerMin: number;
  secondHalfSlopeMbPerMin: number;
  simulatorMb: { start: number; end: number };
}

export async function runDaemonRss(minutes: number, log: (line: string) => void = () => undefined): Promise<DaemonRssReport> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-rss-"));
  const sim = await startSimProcess(dir, 3000);
  const cfg = join(dir, "agent.yaml");
  writeFileSync(cfg, stringify({ ...(demoConfigWithPorts(sim.ports, 20) as object), stateDir: dir }));
  const agent = podwardenProcess(["run", "-c", cfg], "ignore");
  const simPid = sim.child.pid!;
  const simStart = processRssMb(simPid);
  const samples: [number, number][] = [];
  const t0 = performance.now();
  try {
    while (performance.now() - t0 < minutes * 60_000) {
      await new Promise((r) => setTimeout(r, 10_000));
      if (agent.exitCode !== null) throw new Error(`the daemon exited (${agent.exitCode})`);
      const m = (performance.now() - t0) / 60_000;
      samples.push([m, processRssMb(agent.pid!)]);
      if (samples.length % 6 === 0) log(`  ${fmt(m, 1)} min: daemon RSS ${fmt(samples[samples.length - 1][1], 1)} MB (simulator ${fmt(processRssMb(simPid), 1)} MB)`);
    }
    const half = samples.filter(([m]) => m >= minutes / 2);
    return {
      minutes,
      samples,
      maxMb: Math.max(...samples.map(([, y]) => y)),
      slopeMbPerMin: leastSquaresSlope(samples.map(([m]) => m), samples.map(([, y]) => y)),
      secondHalfSlopeMbPerMin: leastSquaresSlope(half.map(([m]) => m), half.map(([, y]) => y)),
      simulatorMb: { start: simStart, end: processRssMb(simPid) },
    };
  } finally {
    agent.kill("SIGTERM");
    await new Promise((r) => agent.once("exit", r));
    sim.child.kill("SIGTERM");
    await new Promise((r) => sim.child.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printDaemonRss(r: DaemonRssReport): void {
  console.log(`\n## daemon RSS over ${r.minutes} min (podwarden run, 8-rack demo pod, simulator in its own process)`);
  console.log(`- max ${fmt(r.maxMb, 1)} MB; slope ${fmt(r.slopeMbPerMin, 3)} MB/min over the run, ${fmt(r.secondHalfSlopeMbPerMin, 3)} MB/min over its second half`);
  console.log(`- simulator: ${fmt(r.simulatorMb.start, 1)} MB -> ${fmt(r.simulatorMb.end, 1)} MB`);
}
