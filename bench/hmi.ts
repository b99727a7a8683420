// The HMI's cost to the daemon (issue #23's targets): `podwarden run` (production flags) on the
// 8-rack demo pod against the simulator in its own process, in three phases of the same length,
// each with its own daemon: the HMI disabled, enabled with no page open, and with 5 pages open
// (tooling/hmi-pages.ts: the live stream, two trends every 5 s). For each: the daemon's CPU and maximum RSS, and the control tick's p99 lateness over the
// recent window. Besides: the page's weight, gzip as served. Run by `npm run bench -- --only hmi`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { freePort } from "../tooling/free-port.js";
import { openHmiPages } from "../tooling/hmi-pages.js";
import { devicesTaken, podwardenProcess, startSimProcess } from "../tooling/sim-process.js";
import { cpuMeter, demoConfigWithPorts, processRssMb, SIM_FIFO, simPriority } from "./agent.js";
import { fmt } from "./stats.js";

export interface HmiPhase {
  phase: string;
  seconds: number;
  cpuPct: number;
  rssMaxMb: number;
  tickP99Us: number | null;
  views: number;
}

export interface HmiBenchResult {
  phases: HmiPhase[];
  ab: Awaited<ReturnType<typeof alternating>>;
  page: { files: number; bytes: number; gzipBytes: number };
  sim: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface BenchDaemon {
  pid: number;
  /** the HMI's base URL */
  base: string;
  /** the control tick's p99 lateness over the recent window, µs (from /metrics) */
  tickP99Us(): Promise<number | null>;
}

/** A daemon on the demo pod against its own simulator, its devices taken and warmed up; stopped after `fn`. */
async function withDaemon<T>(hmi: boolean, fn: (d: BenchDaemon) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-hmi-"));
  const sim = await startSimProcess(dir, 5000, SIM_FIFO);
  const [hmiPort, metricsPort] = [await freePort(), await freePort()];
  const cfg = join(dir, "agent.yaml");
  writeFileSync(cfg, stringify({ ...(demoConfigWithPorts(sim.ports, 20) as object), stateDir: dir, hmi: { enabled: hmi, port: hmiPort }, metrics: { port: metricsPort } }));
  const daemon = podwardenProcess(["run", "-c", cfg], "ignore");
  try {
    await devicesTaken(sim);
    await sleep(5000); // loops in automatic, code warm
    return await fn({
      pid: daemon.pid!,
      base: `http://127.0.0.1:${hmiPort}/`,
      tickP99Us: async () => {
        const m = /^podwarden_tick_lateness_recent_seconds\{quantile="0\.99"\} (\S+)$/m.exec(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
        return m === null ? null : Number(m[1]) * 1e6;
      },
    });
  } finally {
    daemon.kill("SIGTERM");
    await new Promise((r) => daemon.once("exit", r));
    sim.child.kill("SIGTERM");
    await new Promise((r) => sim.child.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  }
}

async function phase(name: string, hmi: boolean, pages: number, seconds: number, atEnd?: (base: string) => Promise<void>): Promise<HmiPhase> {
  return await withDaemon(hmi, async (d) => {
    const open = pages > 0 ? await openHmiPages(d.base, pages) : null;
    try {
      await sleep(2000);
      const cpu = cpuMeter(d.pid);
      let rssMax = 0;
      for (let s = 0; s < seconds; s++) {
        await sleep(1000);
        rssMax = Math.max(rssMax, processRssMb(d.pid));
      }
      const cpuPct = cpu();
      const tickP99Us = await d.tickP99Us();
      await atEnd?.(d.base);
      return { phase: name, seconds, cpuPct, rssMaxMb: rssMax, tickP99Us, views: open?.views() ?? 0 };
    } finally {
      await open?.stop();
    }
  });
}

/**
 * Within one daemon, windows of no page and of 5 pages, alternating, so that the daemon's drift
 * (its collections, the plant's load) falls on both alike: separate daemons differed by 2–5
 * points of CPU from run to run, more than the pages cost.
 */
async function alternating(rounds: number, windowS: number): Promise<{ nonePct: number[]; fivePct: number[]; tickP99Us: { none: (number | null)[]; five: (number | null)[] } }> {
  return await withDaemon(true, async (d) => {
    const out = { nonePct: [] as number[], fivePct: [] as number[], tickP99Us: { none: [] as (number | null)[], five: [] as (number | null)[] } };
    for (let r = 0; r < rounds; r++) {
      let cpu = cpuMeter(d.pid);
      await sleep(windowS * 1000);
      out.nonePct.push(cpu());
      out.tickP99Us.none.push(await d.tickP99Us());
      const pages = await openHmiPages(d.base, 5);
      await sleep(1000); // the pages' first requests (the files) are not the steady cost
      cpu = cpuMeter(d.pid);
      await sleep(windowS * 1000);
      out.fivePct.push(cpu());
      out.tickP99Us.five.push(await d.tickP99Us());
      await pages.stop();
    }
    return out;
  });
}

/** The page's files as a browser gets them (gzip), from a running HMI. */
async function pageWeight(base: string): Promise<HmiBenchResult["page"]> {
  let bytes = 0;
  let gzipBytes = 0;
  const files = ["", "hmi.js", "hmi.css", "uplot.js", "uplot.css"];
  for (const f of files) {
    gzipBytes += Number((await fetch(base + f, { headers: { "accept-encoding": "gzip" } })).headers.get("content-length"));
    bytes += (await (await fetch(base + f, { headers: { "accept-encoding": "identity" } })).arrayBuffer()).byteLength;
  }
  return { files: files.length, bytes, gzipBytes };
}

export async function runHmiBench(quick: boolean): Promise<HmiBenchResult> {
  const seconds = quick ? 10 : 30;
  let page: HmiBenchResult["page"] | null = null;
  const phases: HmiPhase[] = [];
  phases.push(await phase("HMI disabled", false, 0, seconds));
  // the page's weight, read from the idle HMI once its phase is measured
  phases.push(await phase("HMI enabled, no page open", true, 0, seconds, async (base) => void (page = await pageWeight(base))));
  phases.push(await phase("HMI enabled, 5 pages open", true, 5, seconds));
  if (page === null) throw new Error("no page weight");
  const ab = await alternating(quick ? 2 : 6, quick ? 5 : 10);
  return { phases, ab, page, sim: simPriority() };
}

export function printHmi(r: HmiBenchResult): void {
  console.log(`\n## HMI (podwarden run, production flags, 8-rack demo pod, leak polls every 20 ms; ${r.sim})`);
  console.log("| phase | seconds | daemon CPU, % of one core | daemon max RSS MB | tick p99 (recent window) µs | live views received |");
  console.log("|---|---:|---:|---:|---:|---:|");
  for (const p of r.phases) console.log(`| ${p.phase} | ${p.seconds} | ${fmt(p.cpuPct, 1)} | ${fmt(p.rssMaxMb, 1)} | ${p.tickP99Us === null ? "—" : fmt(p.tickP99Us, 0)} | ${p.views} |`);
  const [off, idle, five] = r.phases;
  console.log(`- RSS with the HMI enabled against disabled: ${fmt(idle.rssMaxMb - off.rssMaxMb, 1)} MB idle, ${fmt(five.rssMaxMb - off.rssMaxMb, 1)} MB with 5 pages (target <= 8)`);
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  const ab = r.ab;
  console.log(`- one daemon, ${ab.nonePct.length} rounds of a window with no page then a window with 5 pages: CPU ${fmt(mean(ab.nonePct), 1)} % against ${fmt(mean(ab.fivePct), 1)} % of one core, **${fmt(mean(ab.fivePct) - mean(ab.nonePct), 1)} points** more with 5 pages (target <= 3; per round: ${ab.nonePct.map((x, i) => fmt(ab.fivePct[i] - x, 1)).join(", ")}); tick p99 over the recent window ${ab.tickP99Us.none.map((x) => (x === null ? "—" : fmt(x, 0))).join("/")} µs without, ${ab.tickP99Us.five.map((x) => (x === null ? "—" : fmt(x, 0))).join("/")} µs with`);
  console.log(`- page weight: ${r.page.files} files, ${fmt(r.page.bytes / 1024, 1)} KB, ${fmt(r.page.gzipBytes / 1024, 1)} KB gzip as served (target <= 300 KB)`);
}
