// `npm run soak -- --minutes N [--seed S]`: the demo pod under a random mix of the fault
// catalogue (bench/faults.ts) for N minutes, with mission control subscribed at the far end.
// `npm run soak -- --daemon-rss --minutes N`: instead, the daemon's memory over N minutes
// (bench/daemon-rss.ts).
// `npm run soak -- --full-counts`: instead, the fuzzers (test/fuzz-*.test.ts), the broker-restart
// and Modbus-reconnect stress tests and the hot path's randomised equivalence at their full
// counts; `npm test` runs a third of them (test/helpers/counts.ts).
// Reports the RSS slope, tick p99 per window, faults survived, and events (alarms included) lost
// end to end, which must be 0. A short run is part of `npm test` (test/soak.test.ts).
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import mqtt from "mqtt";
import { waitFor } from "../tooling/processes.js";
import { Prng } from "../sim/prng.js";
import { printDaemonRss, runDaemonRss } from "./daemon-rss.js";
import { FAULT_CLASSES, startCampaign, trial } from "./faults.js";
import { fmt, leastSquaresSlope } from "./stats.js";

export interface SoakReport {
  seconds: number;
  seed: number;
  faults: number;
  survived: number;
  failures: string[];
  byClass: Record<string, number>;
  rssMb: { start: number; end: number; slopeMbPerMin: number };
  tickP99Us: number[];
  windowS: number;
  events: { produced: number; received: number; lost: number; alarmEvents: number };
  spoolDropped: number;
}

export async function runSoak(o: { seconds: number; seed: number; windowS?: number; log?: (line: string) => void }): Promise<SoakReport> {
  const log = o.log ?? ((): void => undefined);
  const rng = new Prng(o.seed);
  const windowS = o.windowS ?? 60;
  const c = await startCampaign();
  // mission control: a persistent session straight to the broker (not through the partitioned link)
  const mc = await mqtt.connectAsync(c.broker.url, { protocolVersion: 4, clientId: `soak-mc-${process.pid}`, clean: false, reconnectPeriod: 100 });
  const seqs = new Set<number>();
  let alarmEvents = 0;
  mc.on("message", (_t, payload) => {
    const e = JSON.parse(payload.toString()) as { seq?: number; type?: string };
    if (typeof e.seq === "number" && !seqs.has(e.seq)) {
      seqs.add(e.seq);
      if (e.type?.startsWith("alarm.") === true) alarmEvents++;
    }
  });
  await mc.subscribeAsync(`${c.pod.base}events`, { qos: 1 });
  const firstSeq = c.pod.uplink.stats().lastSeq.critical + 1;
  const classes = FAULT_CLASSES.filter((f) => f.losesBrokerState !== true);
  const report: SoakReport = { seconds: o.seconds, seed: o.seed, faults: 0, survived: 0, failures: [], byClass: {}, rssMb: { start: 0, end: 0, slopeMbPerMin: 0 }, tickP99Us: [], windowS, events: { produced: 0, received: 0, lost: 0, alarmEvents: 0 }, spoolDropped: 0 };
  const t0 = performance.now();
  const rssT: number[] = [];
  const rssY: number[] = [];
  const sample = (): void => {
    rssT.push((performance.now() - t0) / 60_000);
    rssY.push(process.memoryUsage().rss / 2 ** 20);
  };
  sample();
  const sampler = setInterval(sample, 2000);
  const hist = c.pod.agent.control.latenessHistogram();
  hist.reset();
  const windows = setInterval(() => {
    report.tickP99Us.push(hist.percentile(0.99));
    log(`  ${fmt((performance.now() - t0) / 1000, 0)} s: ${report.survived}/${report.faults} faults survived, tick p99 ${fmt(hist.percentile(0.99), 0)} µs, RSS ${fmt(process.memoryUsage().rss / 2 ** 20, 1)} MB`);
    hist.reset();
  }, windowS * 1000);
  try {
    while (performance.now() - t0 < o.seconds * 1000) {
      const f = rng.pick(classes);
      const rack = rng.int(0, 7);
      report.faults++;
      report.byClass[f.name] = (report.byClass[f.name] ?? 0) + 1;
      try {
        await trial(c, f, rack);
        report.survived++;
      } catch (err) {
        report.failures.push(`${f.name} on rack-${rack + 1}: ${(err as Error).message}`);
        log(`  FAILED: ${f.name} on rack-${rack + 1}: ${(err as Error).message}`);
        await f.clear(c, rack);
      }
      await new Promise((r) => setTimeout(r, rng.int(0, 500)));
    }
    // everything said must reach mission control
    await waitFor(() => c.pod.uplink.stats().connected && c.pod.uplink.stats().spoolDepth.critical === 0, "spool drained", 60_000);
    const last = c.pod.uplink.stats().lastSeq.critical;
    await waitFor(() => {
      for (let s = firstSeq; s <= last; s++) if (!seqs.has(s)) return false;
      return true;
    }, "every event at mission control", 30_000).catch(() => undefined);
    let lost = 0;
    for (let s = firstSeq; s <= last; s++) if (!seqs.has(s)) lost++;
    report.events = { produced: last - firstSeq + 1, received: last - firstSeq + 1 - lost, lost, alarmEvents };
    report.spoolDropped = c.pod.uplink.stats().spoolDropped.critical;
  } finally {
    clearInterval(sampler);
    clearInterval(windows);
    report.tickP99Us.push(hist.percentile(0.99));
    sample();
    report.rssMb = { start: rssY[0], end: rssY[rssY.length - 1], slopeMbPerMin: leastSquaresSlope(rssT, rssY) };
    await mc.endAsync(true);
    await c.stop();
  }
  return report;
}

export function printSoak(r: SoakReport): void {
  console.log(`\n## soak: ${fmt(r.seconds / 60, 1)} min, seed ${r.seed}`);
  console.log(`- faults injected: ${r.faults}, survived (safe state reached, then recovered): ${r.survived}`);
  for (const [k, n] of Object.entries(r.byClass)) console.log(`  - ${k}: ${n}`);
  for (const f of r.failures) console.log(`  - FAILED: ${f}`);
  console.log(`- RSS: ${fmt(r.rssMb.start, 1)} MB -> ${fmt(r.rssMb.end, 1)} MB, slope ${fmt(r.rssMb.slopeMbPerMin, 2)} MB/min (bench process: simulator + agent + uplink)`);
  console.log(`- tick p99 per ${r.windowS} s window, µs: ${r.tickP99Us.map((x) => fmt(x, 0)).join(", ")}`);
  console.log(`- events produced ${r.events.produced} (alarm events ${r.events.alarmEvents}), received at mission control ${r.events.received}, **lost ${r.events.lost}**; spool dropped ${r.spoolDropped}`);
}

const isMain = process.argv[1]?.endsWith("soak.js") === true;
if (isMain) {
  const { values } = parseArgs({
    options: { minutes: { type: "string", default: "10" }, seed: { type: "string", default: "1" }, "daemon-rss": { type: "boolean", default: false }, "full-counts": { type: "boolean", default: false } },
  });
  if (values["full-counts"]) {
    // they are vitest files: run them so, each at its full count
    const r = spawnSync("npx", ["vitest", "run", "test/fuzz-", "test/uplink-outage", "test/drivers-modbus", "test/hotpath-equivalence"], { stdio: "inherit", env: { ...process.env, FULL_COUNTS: "1" } });
    process.exit(r.status ?? 1);
  }
  const minutes = Number(values.minutes);
  if (!(minutes > 0)) throw new Error("--minutes must be a positive number");
  if (values["daemon-rss"]) {
    // not a fault soak: the daemon in its own process, its memory watched for the whole run
    printDaemonRss(await runDaemonRss(minutes, (l) => console.log(l)));
  } else {
    const r = await runSoak({ seconds: minutes * 60, seed: Number(values.seed) >>> 0, windowS: minutes >= 5 ? 60 : 15, log: (l) => console.log(l) });
    printSoak(r);
    process.exitCode = r.events.lost === 0 && r.failures.length === 0 ? 0 : 1;
  }
}
