// The flight recorder (issue #26), each figure beside its baseline in the same run:
//  - the tick's cost: the demo pod's bank stepped in this thread with new samples every tick,
//    with the recorder's begin/pre/post around the step against the bare step, alternating
//    blocks, ns per tick and per loop-step;
//  - tick lateness of the real control worker (SCHED_FIFO where permitted, the main thread
//    loaded as in the agent group) with the recorder's ring against without, alternating windows;
//  - memory: the ring's shared memory at the default window, and the daemon's RSS with the
//    recorder on against off (the demo pod, its simulator in another process);
//  - a trigger's file: the default window streamed from a full ring to a file (in chunks, on the
//    main thread between other work), written and synced;
//  - replay speed: the default window replayed into the virtual pod (the demo config's wiring
//    and the hot path, the actuator writes logged), in virtual time against real time, beside
//    the hot path alone.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { loadBank, writeSample } from "../hotpath-as/bank-config.js";
import { loadWasmHotPath } from "../hotpath-as/wasm-bank.js";
import { ControlThread } from "../agent/control/control-thread.js";
import { allocateRing, FlightRingReader, FlightRingWriter, ringBytes, type RingShape } from "../agent/control/flight-ring.js";
import { ringFor } from "../agent/recorder/flight-recorder.js";
import { replayRecording } from "../agent/recorder/flight-replay.js";
import { readRecording, RECORDING_VERSION, streamRecording, type RecordingHeader } from "../agent/recorder/recording-file.js";
import { RECORDER_SCHEMA } from "../agent/recorder/schema.js";
import { demoAgentConfig } from "../cli/demo-config.js";
import { podBankSpec } from "../pod/bank.js";
import { bankPointIds, podLayout } from "../pod/layout.js";
import { devicesTaken, podwardenProcess, startSimProcess } from "../tooling/sim-process.js";
import { stopProcess } from "../tooling/processes.js";
import { demoConfigWithPorts, processRssMb } from "./agent.js";
import { fmt, quantile } from "./stats.js";
import { virtualLoopPod } from "../pod/virtual-loop.js";

export interface RecorderBenchResult {
  pod: { points: number; loops: number; racks: number };
  tickNs: { off: number[]; on: number[] };
  lateness: { what: string; p99Us: number[]; p999Us: number[] }[];
  latenessWindowS: number;
  ringMb: number;
  recordBytes: number;
  rssMb: { what: string; mb: number[] }[];
  copyMs: number[];
  fileMb: number;
  replay: { ticks: number; runs: { what: string; wallMs: number[]; speedup: number[] }[] };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function defaults(): { preS: number; postS: number; decimation: number; maxFiles: number; enabled: boolean } {
  const p = (RECORDER_SCHEMA as unknown as { properties: Record<string, { default: number | boolean }> }).properties;
  return { enabled: true, preS: p.preS.default as number, postS: p.postS.default as number, decimation: p.decimation.default as number, maxFiles: p.maxFiles.default as number };
}

function demoBank() {
  const c = demoAgentConfig();
  const layout = podLayout(c);
  return { spec: podBankSpec(c.control, layout, c.racks), layout };
}

/**
 * Steps the demo bank `ticks` times, through a ring writer or not; ns per tick. Fresh samples
 * every tick (the worst case), or each point at its own period in ticks (`every`: the demo's
 * poll rates).
 */
function stepBlock(ticks: number, ring: FlightRingWriter | null, hp: ReturnType<typeof loadWasmHotPath>, P: number, t0: number, every?: readonly number[]): number {
  const v = hp.views;
  const frame = { loopSp: v.loopF.sp, loopMode: v.loopI.mode, loopManual: v.loopF.manual, loopOverride: v.loopF.override, rackManualIsolate: v.rackI.manualIsolate };
  const edges = new Int32Array(64);
  const start = process.hrtime.bigint();
  for (let k = 0; k < ticks; k++) {
    const t = t0 + k;
    ring?.begin(v);
    for (let i = 0; i < P; i++) if (every === undefined || t % every[i] === 0) writeSample(v, i, i < 2 ? 0 : 30 + ((i + k) % 7) * 0.01, t);
    ring?.pre(v, frame, 0, edges, edges, edges, t, 0.001);
    hp.step(t, 0.001);
    ring?.post(v);
  }
  return Number(process.hrtime.bigint() - start) / ticks;
}

/** The demo bank loaded into a release hot path, and a ring at the default window for it. */
function demoRing() {
  const { spec } = demoBank();
  const shape: RingShape = { points: spec.points.length, loops: spec.loops.length, racks: spec.racks.length, ...ringFor(defaults(), 1) };
  const buffers = allocateRing(shape);
  const hp = loadWasmHotPath("release");
  loadBank(hp, spec);
  return { spec, shape, hp, writer: new FlightRingWriter(shape, buffers), reader: new FlightRingReader(shape, buffers) };
}

function tickCost(quick: boolean): { off: number[]; on: number[]; ring: FlightRingReader } {
  const { spec, shape, hp, writer, reader } = demoRing();
  const P = spec.points.length;
  let t = 1;
  // warm-up, and a full ring for the copy and replay figures after
  for (let k = 0; k < 3; k++) {
    stepBlock(shape.capacity, writer, hp, P, t);
    t += shape.capacity;
  }
  const off: number[] = [];
  const on: number[] = [];
  const block = quick ? 20_000 : 100_000;
  for (let round = 0; round < (quick ? 3 : 10); round++) {
    off.push(stepBlock(block, null, hp, P, t));
    t += block;
    on.push(stepBlock(block, writer, hp, P, t));
    t += block;
  }
  return { off, on, ring: reader };
}

/** A full ring of the demo bank sampled at the demo's poll rates (leak inputs every 20 ms, the rest every 100 ms), as a daemon's recording holds it. */
function polledRing(): FlightRingReader {
  const { spec, shape, hp, writer, reader } = demoRing();
  const every = spec.points.map((p) => (p.kind === "leak" ? 20 : 100));
  stepBlock(3 * shape.capacity, writer, hp, spec.points.length, 1, every);
  return reader;
}

async function lateness(seconds: number, rounds: number): Promise<RecorderBenchResult["lateness"]> {
  const { spec } = demoBank();
  const out = [
    { what: "control worker, recorder off", ring: undefined, p99Us: [] as number[], p999Us: [] as number[] },
    { what: "control worker, recorder on (default window)", ring: ringFor(defaults(), 1), p99Us: [] as number[], p999Us: [] as number[] },
  ];
  for (let round = 0; round < rounds; round++) {
    for (const o of out) {
      const ct = new ControlThread(spec, { periodMs: 1, schedFifo: true, schedPriority: 40, warmupTicks: 20000, recorder: o.ring });
      await ct.start();
      await sleep(500);
      ct.latenessHistogram().reset();
      // the same main-thread load as the agent group's lateness figure: allocation bursts
      let stop = false;
      const junk: unknown[] = [];
      const burst = (): void => {
        if (stop) return;
        junk.length = 0;
        const t0 = performance.now();
        while (performance.now() - t0 < 8) junk.push({ a: Math.random(), b: "x".repeat(64) });
        setTimeout(burst, 2);
      };
      burst();
      await sleep(seconds * 1000);
      stop = true;
      const h = ct.latenessHistogram();
      o.p99Us.push(h.percentile(0.99));
      o.p999Us.push(h.percentile(0.999));
      await ct.stop();
    }
  }
  return out.map(({ what, p99Us, p999Us }) => ({ what, p99Us, p999Us }));
}

function daemon(dir: string, name: string, data: Record<string, unknown>): ChildProcess {
  const cfg = join(dir, `${name}.yaml`);
  mkdirSync(join(dir, name));
  writeFileSync(cfg, stringify({ ...data, stateDir: join(dir, name) }));
  return podwardenProcess(["run", "-c", cfg], "ignore");
}

async function daemonRss(seconds: number, rounds: number): Promise<RecorderBenchResult["rssMb"]> {
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-rec-"));
  const sim = await startSimProcess(dir, 5000);
  const out = [
    { what: "the demo pod's daemon, recorder off", enabled: false, mb: [] as number[] },
    { what: "the same, recorder on (default window)", enabled: true, mb: [] as number[] },
  ];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [i, o] of out.entries()) {
        const data = demoConfigWithPorts(sim.ports, 20) as Record<string, unknown>;
        data.recorder = { enabled: o.enabled };
        const d = daemon(dir, `rss-${round}-${i}`, data);
        try {
          await devicesTaken(sim);
          let max = 0;
          for (let s = 0; s < seconds; s++) {
            await sleep(1000);
            max = Math.max(max, processRssMb(d.pid!));
          }
          o.mb.push(max);
        } finally {
          await stopProcess(d);
        }
      }
    }
  } finally {
    await stopProcess(sim.child);
    rmSync(dir, { recursive: true, force: true });
  }
  return out.map(({ what, mb }) => ({ what, mb }));
}

export async function runRecorderBench(quick = false): Promise<RecorderBenchResult> {
  const { spec, layout } = demoBank();
  const cost = tickCost(quick);
  const shape = cost.ring.shape;
  const l = cost.ring.layout;
  const d = defaults();
  const window = ringFor(d, 1);
  const copyMs: number[] = [];
  const dir = mkdtempSync(join(tmpdir(), "podwarden-bench-rec-file-"));
  const head: Omit<RecordingHeader, "firstSeq" | "count" | "checkpoints"> = {
    format: "podwarden-flight-recording",
    version: RECORDING_VERSION,
    id: "bench",
    site: "bench",
    pod: "bench",
    configHash: "bench",
    build: { version: "bench", hotPath: "release" },
    createdAt: new Date().toISOString(),
    periodMs: 1,
    decimation: 1,
    checkpointEvery: shape.checkpointEvery,
    sizes: { points: shape.points, loops: shape.loops, racks: shape.racks },
    names: { points: bankPointIds(demoAgentConfig()), loops: Array.from({ length: layout.loops }, (_, i) => layout.loopName(i)), racks: layout.racks.map((r) => r.name) },
    spec,
    triggers: [],
    triggerSeq: 0,
    complete: true,
  };
  const written = cost.ring.written();
  const from = Math.floor((written - window.postTicks - window.preTicks) / shape.checkpointEvery) * shape.checkpointEvery;
  let file = "";
  for (let k = 0; k < (quick ? 3 : 10); k++) {
    const t0 = performance.now();
    file = (await streamRecording(dir, { ...head, triggerSeq: from + window.preTicks }, cost.ring, from, written)).file;
    copyMs.push(performance.now() - t0);
  }
  const fileMb = statSync(file).size / 1e6;
  const rec = await readRecording(file);
  const demo = demoAgentConfig();
  const pod = virtualLoopPod(demo);
  const pr = polledRing();
  const prWritten = pr.written();
  const prFrom = Math.floor((prWritten - window.postTicks - window.preTicks) / shape.checkpointEvery) * shape.checkpointEvery;
  const polledFile = (await streamRecording(dir, { ...head, id: "bench-polled", triggerSeq: prFrom + window.preTicks }, pr, prFrom, prWritten)).file;
  const polled = await readRecording(polledFile);
  rmSync(dir, { recursive: true, force: true });
  const runs = [
    { what: "the demo's poll rates, into the virtual pod (wiring, hot path, writes)", rec: polled, o: { pod } },
    { what: "the demo's poll rates, the hot path alone", rec: polled, o: {} },
    { what: "every point every tick (the worst case), into the virtual pod", rec, o: { pod } },
    { what: "every point every tick, the hot path alone", rec, o: {} },
  ].map((r) => ({ ...r, wallMs: [] as number[], speedup: [] as number[] }));
  let ticks = 0;
  // alternating, so drift on the machine falls on each alike
  for (let k = 0; k < (quick ? 2 : 5); k++) {
    for (const r of runs) {
      const t0 = performance.now();
      const out = replayRecording(r.rec, r.o);
      const dt = performance.now() - t0;
      if (!out.identical) throw new Error(`bench replay not identical: ${out.firstDifference?.what}`);
      ticks = out.ticks;
      r.wallMs.push(dt);
      r.speedup.push(out.virtualMs / dt);
    }
  }
  const latenessWindowS = quick ? 5 : 20;
  return {
    pod: { points: shape.points, loops: shape.loops, racks: shape.racks },
    tickNs: { off: cost.off, on: cost.on },
    lateness: await lateness(latenessWindowS, quick ? 1 : 3),
    latenessWindowS,
    ringMb: ringBytes(shape) / 1e6,
    recordBytes: l.f64Width * 8 + l.i32Width * 4,
    rssMb: await daemonRss(quick ? 10 : 30, quick ? 1 : 2),
    copyMs,
    fileMb,
    replay: { ticks, runs: runs.map(({ what, wallMs, speedup }) => ({ what, wallMs, speedup })) },
  };
}

export function printRecorder(r: RecorderBenchResult): void {
  const list = (xs: number[], d = 1): string => xs.map((x) => fmt(x, d)).join(", ");
  const med = (xs: number[]): number => quantile(xs, 0.5);
  console.log(`\n## Flight recorder (the demo pod's bank: ${r.pod.points} points, ${r.pod.loops} loops, ${r.pod.racks} racks; default window)\n`);
  console.log("The tick's cost, this thread, new samples every tick, alternating blocks of ticks:\n");
  console.log("| | ns per tick, each block | median | ns per loop-step (median / loops) |");
  console.log("|---|---|---|---|");
  console.log(`| bare step (samples written, step) | ${list(r.tickNs.off, 0)} | ${fmt(med(r.tickNs.off), 0)} | ${fmt(med(r.tickNs.off) / r.pod.loops, 0)} |`);
  console.log(`| with the recorder (begin, pre, step, post; a checkpoint every 250 ticks) | ${list(r.tickNs.on, 0)} | ${fmt(med(r.tickNs.on), 0)} | ${fmt(med(r.tickNs.on) / r.pod.loops, 0)} |`);
  console.log(`\nControl worker tick lateness (1 ms, main thread loaded), ${r.latenessWindowS} s windows, alternating:\n`);
  console.log("| | p99 µs, each window | p99.9 µs, each window |");
  console.log("|---|---|---|");
  for (const x of r.lateness) console.log(`| ${x.what} | ${list(x.p99Us, 0)} | ${list(x.p999Us, 0)} |`);
  console.log(`\nMemory: ${r.recordBytes} bytes per tick; the ring at the default window ${fmt(r.ringMb, 1)} MB of shared memory; a recording file of the whole window ${fmt(r.fileMb, 1)} MB.\n`);
  console.log("| daemon | max RSS MB, each run |");
  console.log("|---|---|");
  for (const x of r.rssMb) console.log(`| ${x.what} | ${list(x.mb)} |`);
  console.log(`\nA recording of the default window streamed from the ring to disk (chunks of 512 ticks, written and synced): ${list(r.copyMs)} ms.`);
  console.log(`\nReplay of ${r.replay.ticks} ticks (${fmt(r.replay.ticks / 1000, 1)} s of virtual time), alternating:\n`);
  console.log("| recording, replayed | ms, each run | x real time, each run |");
  console.log("|---|---|---|");
  for (const x of r.replay.runs) console.log(`| ${x.what} | ${list(x.wallMs, 0)} | ${list(x.speedup, 0)} |`);
}
