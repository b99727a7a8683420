// Replays a flight recording into the virtual pod, in virtual time: from the recording's first
// checkpoint (the whole bank as it stood), each recorded tick's field samples go through the pod
// wiring (pod/wiring.ts, by the point ids the recording names, as the drivers' points do) into
// the bank, its commands go in exactly as the control worker put them
// (agent/control/bank-inputs.ts), the step runs with the recorded time and dt, its outputs are
// compared with the recorded ones, and the wiring writes the actuators on the daemon's schedule
// (at once on an interlock change, every pass besides), each write logged.
//  - Same build, same config: every output must come out bit for bit (a difference is a bug in
//    the recorder or a hot path that is not deterministic).
//  - A changed config (`spec`) or build (`module`): the outputs may differ; what matters is
//    whether each rack tripped, and when, against the recording.
import * as L from "../../hotpath-as/assembly/layout.js";
import { writeSample, type BankSpec } from "../../hotpath-as/bank-config.js";
import { compileHotPath, WasmHotPath } from "../../hotpath-as/wasm-bank.js";
import type { BankViews } from "../../hotpath-as/views.js";
import { applyCommands, applyPatch } from "../control/bank-inputs.js";
import { FLAG_COMMANDS, FLAG_PATCH, recordLayout, restoreCheckpoint } from "../control/flight-ring.js";
import type { Point } from "../../lib/points.js";
import { UNCONFIGURED_CDU_SUPPLY } from "../../pod/layout.js";
import { VirtualTimeLoop, type VirtualLoopPod } from "../../pod/virtual-loop.js";
import type { OutputSink } from "../../pod/wiring.js";
import type { Recording } from "./recording-file.js";

export interface ReplayOptions {
  /** the bank config to replay with (a changed config); default: the recording's */
  spec?: BankSpec;
  /** the hot path build to replay with (a changed build); default: this build's release */
  module?: WebAssembly.Module;
  /**
   * the pod's wiring (its racks' and CDU's points and outputs, and whether caps are written):
   * the samples are routed through it by point id and the actuator writes it makes are logged.
   * Without it the samples go into the bank slot by slot, and nothing is written.
   */
  pod?: ReplayPod;
  /** called after every replayed tick (and its writes), with the tick's time and the bank: what a HIL scenario samples */
  onTick?: (tickMs: number, v: BankViews) => void;
}

export type ReplayPod = VirtualLoopPod;

/** An actuator write the wiring made in the replay: a command that changed, at a tick. */
export interface ReplayWrite {
  seq: number;
  tickMs: number;
  id: string;
  value: number;
}

/** At most this many writes are kept (a window of minutes at most changes a few a pass). */
export const MAX_REPLAY_WRITES = 20_000;

/** Per rack: the recorded tick (seq and time) at which it left normal service, and when its supply isolation closed. */
export interface RackTrip {
  rack: string;
  /** seq and tick time at which the isolation state left RACK_NORMAL, null: it did not in the window */
  isolated: { seq: number; tickMs: number } | null;
  /** the first tick the supply isolation valve was commanded closed */
  supplyClosed: { seq: number; tickMs: number } | null;
  /** the state at the end of the window (RACK_* code) */
  finalState: number;
  /** replayed through the wiring: the first tick after which a close of either isolation valve was written (null: none, or not replayed through it) */
  isolationWritten: { seq: number; tickMs: number } | null;
}

export interface ReplayResult {
  fromSeq: number;
  ticks: number;
  /** every output of every tick equal to the recording's, bit for bit (NaN equal to NaN) */
  identical: boolean;
  /** the first output that differed, and how many ticks differed in all */
  firstDifference: { seq: number; tickMs: number; what: string } | null;
  ticksDiffering: number;
  recorded: RackTrip[];
  replayed: RackTrip[];
  /** the same racks tripped (left normal service) as in the recording */
  sameTrips: boolean;
  /** virtual time covered, ms */
  virtualMs: number;
  /**
   * replayed through the wiring: each actuator's command at the first pass, then every change,
   * in order, isolation valves first within a pass (MAX_REPLAY_WRITES at most; `writesDropped`
   * more). The supervisor's decisions are not recorded: the replay writes with none (no budget
   * caps, no escalation's power-off), so a rack's power follows only its coolant here.
   */
  initialWrites: Record<string, number>;
  writes: ReplayWrite[];
  writesDropped: number;
}

export function replayRecording(rec: Recording, o: ReplayOptions = {}): ReplayResult {
  const h = rec.header;
  const w = rec.window;
  if (h.decimation !== 1) throw new Error(`${h.id}: recorded one tick in ${h.decimation}: a decimated recording cannot be replayed`);
  if (w.checkpoints.count === 0) throw new Error(`${h.id}: no checkpoint in the recording to start from (it is shorter than the checkpoint period)`);
  const { points: P, loops: Lc, racks: R } = h.sizes;
  const l = recordLayout(P, Lc, R);
  const whatIf = o.spec !== undefined;
  const spec = o.spec ?? h.spec;
  if (spec.points.length !== P || spec.loops.length !== Lc || spec.racks.length !== R) {
    throw new Error(`the config replayed has ${spec.points.length} points, ${spec.loops.length} loops, ${spec.racks.length} racks; the recording ${P}, ${Lc}, ${R}: a replay needs the same pod`);
  }
  const hp = new WasmHotPath(o.module ?? compileHotPath("release").module);
  if (hp.configure(Lc, P, R) !== L.STEP_OK) throw new Error("the recording's pod does not fit the hot path");
  // the module's own few globals (its scan schedule and fast-path counts) start as after a load:
  // the first step's full point scan sets them from the restored bank, as it would have anyway
  hp.resetState();
  const v = hp.views;
  const ckSeq = w.checkpoints.i32[0];
  restoreCheckpoint(v, h.sizes, w.checkpoints.f64.subarray(0, l.checkpointF64), w.checkpoints.i32.subarray(0, l.checkpointI32));
  // a changed config takes over at the checkpoint, as a reload would: run-time state carries on
  if (whatIf) applyPatch(v, spec);

  const start = ckSeq - w.firstSeq;
  const FW = l.f64Width;
  const IW = l.i32Width;
  const F = w.f64;
  const I = w.i32;
  const { f, i } = l;
  const trips = (): RackTrip[] => h.names.racks.map((rack) => ({ rack, isolated: null, supplyClosed: null, finalState: L.RACK_NORMAL, isolationWritten: null }));
  const recorded = trips();
  const replayed = trips();
  const note = (t: RackTrip[], r: number, state: number, supplyOpen: number, seq: number, tickMs: number): void => {
    if (state !== L.RACK_NORMAL && t[r].isolated === null) t[r].isolated = { seq, tickMs };
    if (supplyOpen === 0 && t[r].supplyClosed === null) t[r].supplyClosed = { seq, tickMs };
    t[r].finalState = state;
  };
  let firstDifference: ReplayResult["firstDifference"] = null;
  let ticksDiffering = 0;
  let firstMs = NaN;
  let lastMs = NaN;
  const sub = (a: Float64Array | Int32Array, at: number, n: number) => a.subarray(at, at + n);

  // the pod loop in virtual time: samples in by point id through the wiring, the actuator passes
  // out, as the daemon's control plane does
  const pod = o.pod;
  const initialWrites: Record<string, number> = {};
  const writes: ReplayWrite[] = [];
  let writesDropped = 0;
  const last = new Map<string, number>();
  const isoOutputs = new Map<string, number>();
  if (pod !== undefined) pod.racks.forEach((r, k) => [r.outputs.supplyIsolation, r.outputs.returnIsolation].forEach((id) => isoOutputs.set(id, k)));
  let seq = 0;
  const sink: OutputSink = {
    // like the driver, only a changed command is a write
    setOutput: (id, value) => {
      if (loop === null || last.get(id) === value) return;
      last.set(id, value);
      if (loop.passes === 1) {
        initialWrites[id] = value;
        return;
      }
      if (writes.length < MAX_REPLAY_WRITES) writes.push({ seq, tickMs: loop.passMs, id, value });
      else writesDropped++;
      const rack = isoOutputs.get(id);
      if (rack !== undefined && value === 0) replayed[rack].isolationWritten ??= { seq, tickMs: loop.passMs };
    },
  };
  const loop = pod === undefined ? null : new VirtualTimeLoop(pod, hp, sink);
  if (loop !== null) {
    if (loop.layout.loops !== Lc || loop.layout.racks.length !== R) throw new Error(`the config replayed wires ${loop.layout.loops} loops and ${loop.layout.racks.length} racks; the recording has ${Lc} and ${R}: a replay needs the same pod`);
    const inputs = new Set(loop.wiring.inputs);
    // a slot the recording names as unconfigured is never sampled
    const missing = h.names.points.filter((id) => !inputs.has(id) && id !== UNCONFIGURED_CDU_SUPPLY);
    if (missing.length > 0) throw new Error(`the config replayed does not wire the recorded points ${missing.join(", ")}: a replay needs the same pod`);
  }
  const sample: Point = { id: "", value: NaN, sourceTimeMs: 0, quality: "good" };
  const lastValue = new Float64Array(P).fill(NaN);
  const lastTs = new Float64Array(P).fill(NaN);
  for (let k = start; k < w.count; k++) {
    const fo = k * FW;
    const io = k * IW;
    seq = w.firstSeq + k;
    const tickMs = F[fo + f.tickMs];
    if (k === start) firstMs = tickMs;
    lastMs = tickMs;
    for (let p = 0; p < P; p++) {
      if (!((I[io + i.written + (p >>> 5)] >>> (p & 31)) & 1)) continue;
      const value = F[fo + f.value + p];
      const ts = F[fo + f.ts + p];
      // The worker copies every sample from its frames into the bank every tick; the wiring saw
      // only those that were new (a poll's answer). A sample like the last one is the frame copy,
      // written as the worker wrote it; a new one goes through the wiring, as the driver's did.
      const fresh = !(Object.is(value, lastValue[p]) && ts === lastTs[p]);
      lastValue[p] = value;
      lastTs[p] = ts;
      if (loop !== null && fresh) {
        // one point object, reused: the wiring reads it and keeps nothing of it
        sample.id = h.names.points[p];
        sample.value = value;
        sample.sourceTimeMs = ts;
        // a NaN sample was an invalid reading, stamped when it was routed
        sample.quality = Number.isNaN(value) ? "invalid" : "good";
        loop.route(sample, ts);
      } else writeSample(v, p, value, ts);
    }
    const flags = I[io + i.flags];
    if (flags & FLAG_COMMANDS) {
      applyCommands(
        v,
        { loopSp: sub(F, fo + f.sp, Lc), loopManual: sub(F, fo + f.manual, Lc), loopOverride: sub(F, fo + f.override, Lc), loopMode: sub(I, io + i.mode, Lc), rackManualIsolate: sub(I, io + i.manualIsolate, R) },
        Lc,
        R,
        sub(I, io + i.resetEdge, R),
        sub(I, io + i.restoreEdge, R),
        sub(I, io + i.tuneEdge, Lc),
        tickMs,
      );
    }
    // a reload's tuning, where the recorded run had one (the file carries the spec it ended with)
    if (flags & FLAG_PATCH && !whatIf) applyPatch(v, h.spec);
    if (loop !== null) loop.step(tickMs, F[fo + f.dtS], `recorded tick ${seq}`);
    else {
      const rc = hp.step(tickMs, F[fo + f.dtS]);
      if (rc !== L.STEP_OK) throw new Error(`the hot path refused recorded tick ${seq} (code ${rc})`);
    }
    o.onTick?.(tickMs, v);

    let what: string | null = null;
    for (let n = 0; n < Lc && what === null; n++) {
      if (!Object.is(v.loopF.out[n], F[fo + f.out + n])) what = `${h.names.loops[n]} output ${v.loopF.out[n]} (recorded ${F[fo + f.out + n]})`;
      else if (!Object.is(v.loopF.pv[n], F[fo + f.pv + n])) what = `${h.names.loops[n]} pv ${v.loopF.pv[n]} (recorded ${F[fo + f.pv + n]})`;
      else if (v.loopI.status[n] !== I[io + i.loopStatus + n]) what = `${h.names.loops[n]} status ${v.loopI.status[n]} (recorded ${I[io + i.loopStatus + n]})`;
    }
    for (let r = 0; r < R && what === null; r++) {
      const pairs: [string, number, number][] = [
        ["state", v.rackI.state[r], I[io + i.rackState + r]],
        ["status", v.rackI.status[r], I[io + i.rackStatus + r]],
        ["supplyOpen", v.rackI.supplyOpen[r], I[io + i.supplyOpen + r]],
        ["returnOpen", v.rackI.returnOpen[r], I[io + i.returnOpen + r]],
        ["resetResult", v.rackI.resetResult[r], I[io + i.resetResult + r]],
      ];
      const bad = pairs.find(([, a, b]) => a !== b);
      if (bad !== undefined) what = `${h.names.racks[r]} ${bad[0]} ${bad[1]} (recorded ${bad[2]})`;
    }
    for (let p = 0; p < P && what === null; p++) {
      if (v.pointI.quality[p] !== I[io + i.quality + p]) what = `${h.names.points[p]} quality ${v.pointI.quality[p]} (recorded ${I[io + i.quality + p]})`;
    }
    if (what !== null) {
      ticksDiffering++;
      firstDifference ??= { seq, tickMs, what };
    }
    for (let r = 0; r < R; r++) {
      note(recorded, r, I[io + i.rackState + r], I[io + i.supplyOpen + r], seq, tickMs);
      note(replayed, r, v.rackI.state[r], v.rackI.supplyOpen[r], seq, tickMs);
    }
  }
  return {
    fromSeq: ckSeq,
    ticks: Math.max(0, w.count - start),
    identical: firstDifference === null,
    firstDifference,
    ticksDiffering,
    recorded,
    replayed,
    sameTrips: recorded.every((t, r) => (t.isolated === null) === (replayed[r].isolated === null)),
    virtualMs: lastMs - firstMs,
    initialWrites,
    writes,
    writesDropped,
  };
}
