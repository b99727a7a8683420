// `podwarden recording list | export <id> --csv | replay <id> | trigger`: the flight recorder's
// files, read where the daemon wrote them (<stateDir>/recordings), and an operator's trigger
// through the daemon's admin socket.
import { createWriteStream, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Writable } from "node:stream";
import * as L from "../hotpath-as/assembly/layout.js";
import { loadAgentConfig } from "../agent/config/load.js";
import { recordLayout } from "../agent/control/flight-ring.js";
import { adminRequest } from "../agent/ops/admin-socket.js";
import { replayRecording, type RackTrip, type ReplayPod } from "../agent/recorder/flight-replay.js";
import { recordingCsv } from "../agent/recorder/recording-csv.js";
import { findRecording, listRecordings, readRecording } from "../agent/recorder/recording-file.js";
import { podBankSpec } from "../pod/bank.js";
import { podLayout } from "../pod/layout.js";
import { virtualLoopPod } from "../pod/virtual-loop.js";

export interface RecordingArgs {
  sub: string | undefined;
  id: string | undefined;
  stateDir: string;
  csv: boolean;
  out: string | undefined;
  /** replay: a changed config to replay with */
  withConfig: string | undefined;
  /** replay: a changed hot-path build (.wasm) to replay with */
  wasm: string | undefined;
  /** replay: the daemon's config (-c), whose wiring the samples go through */
  config: string | undefined;
  log: (line: string) => void;
}

const STATE_NAMES: Record<number, string> = { [L.RACK_NORMAL]: "normal", [L.RACK_ISOLATING]: "isolating", [L.RACK_ISOLATED]: "isolated", [L.RACK_ESCALATED]: "escalated" };

function trip(t: RackTrip, t0: number): string {
  if (t.isolated === null) return `stayed in service (${STATE_NAMES[t.finalState] ?? t.finalState})`;
  const at = (x: { tickMs: number } | null): string => (x === null ? "never" : `${(x.tickMs - t0).toFixed(1)} ms`);
  return `left service at ${at(t.isolated)}, supply closed at ${at(t.supplyClosed)}, ends ${STATE_NAMES[t.finalState] ?? t.finalState}`;
}

/** Returns the exit code: 0 done (replay: same trips), 1 a replay that differs, throws on a usage or file problem. */
export async function recordingCommand(a: RecordingArgs): Promise<number> {
  const dir = join(a.stateDir, "recordings");
  switch (a.sub) {
    case "list": {
      const { recordings, bad } = listRecordings(dir);
      if (recordings.length === 0) a.log(`no recordings in ${dir}`);
      for (const r of recordings) {
        const h = r.header;
        a.log(`${r.id}  ${h.createdAt}  ${h.count} ticks (${((h.count * h.periodMs * h.decimation) / 1000).toFixed(1)} s)${h.complete ? "" : "  INCOMPLETE"}  ${(r.bytes / 1e6).toFixed(1)} MB  ${h.triggers.map((t) => t.reason).join(", ")}`);
      }
      for (const b of bad) a.log(`unreadable: ${b.why}`);
      return 0;
    }
    case "export": {
      if (a.id === undefined) throw new Error("recording export needs <id>");
      if (!a.csv) throw new Error("recording export: --csv is the one format (the .pwrec file itself is the binary form)");
      const rec = await readRecording(findRecording(dir, a.id).file);
      const out: Writable = a.out === undefined ? process.stdout : createWriteStream(a.out);
      for (const line of recordingCsv(rec)) if (!out.write(line)) await new Promise((r) => out.once("drain", r));
      if (a.out !== undefined) await new Promise<void>((done, fail) => out.end((err?: Error | null) => (err ? fail(err) : done())));
      return 0;
    }
    case "replay": {
      if (a.id === undefined) throw new Error("recording replay needs <id>");
      const rec = await readRecording(findRecording(dir, a.id).file);
      let spec;
      let pod: ReplayPod | undefined;
      if (a.withConfig !== undefined) {
        const c = loadAgentConfig(a.withConfig).config;
        spec = podBankSpec(c.control, podLayout(c), c.racks);
        pod = virtualLoopPod(c);
      } else if (a.config !== undefined) {
        // the daemon's wiring, with the recorded tuning
        const l = loadAgentConfig(a.config);
        pod = virtualLoopPod(l.config);
        if (l.hash !== rec.header.configHash) a.log(`note: ${a.config} is not the config the recording was made with (sha256 ${l.hash.slice(0, 12)}, recorded ${rec.header.configHash.slice(0, 12)}): its wiring carries the recorded samples`);
      }
      const module = a.wasm === undefined ? undefined : new WebAssembly.Module(readFileSync(a.wasm));
      const started = performance.now();
      const r = replayRecording(rec, { spec, module, pod });
      const wallMs = performance.now() - started;
      const h = rec.header;
      const l = recordLayout(h.sizes.points, h.sizes.loops, h.sizes.racks);
      // times are shown from the trigger's tick
      const t0 = rec.window.f64[Math.min(Math.max(0, h.triggerSeq - h.firstSeq), Math.max(0, h.count - 1)) * l.f64Width + l.f.tickMs];
      a.log(`${h.id}: ${r.ticks} ticks from checkpoint ${r.fromSeq} (${(r.virtualMs / 1000).toFixed(2)} s of virtual time in ${wallMs.toFixed(0)} ms, ${(r.virtualMs / wallMs).toFixed(0)}x real time)`);
      a.log(a.withConfig === undefined && a.wasm === undefined ? "replayed with the recorded config and this build" : `replayed with${a.withConfig === undefined ? "" : ` config ${a.withConfig}`}${a.wasm === undefined ? "" : ` build ${a.wasm}`}`);
      if (r.identical) a.log("outputs: identical to the recording, bit for bit");
      else a.log(`outputs: ${r.ticksDiffering} ticks differ; the first at seq ${r.firstDifference?.seq}: ${r.firstDifference?.what}`);
      for (let k = 0; k < r.recorded.length; k++) {
        const rec_ = trip(r.recorded[k], t0);
        const rep = trip(r.replayed[k], t0);
        a.log(`  ${r.recorded[k].rack.padEnd(10)} recorded: ${rec_}${rep === rec_ ? "  (replay: the same)" : `\n  ${"".padEnd(10)} replayed: ${rep}`}`);
      }
      a.log(r.sameTrips ? "the same racks tripped as in the recording" : "the racks that tripped DIFFER from the recording");
      if (pod === undefined) a.log("replayed into the hot path only: give the daemon's config (-c) to replay through its wiring and see the actuator writes");
      else {
        a.log(`actuator writes by the wiring, on the daemon's schedule: ${r.writes.length + r.writesDropped} changes after the first pass (the supervisor's caps and escalations are not recorded: none replayed)`);
        for (const t of r.replayed) {
          if (t.isolationWritten === null) continue;
          const pass = r.writes.filter((w) => w.seq === t.isolationWritten?.seq);
          a.log(`  ${t.rack}: isolation written ${t.supplyClosed === null ? "" : `${t.isolationWritten.seq - t.supplyClosed.seq} ticks after the tick that decided it, `}at ${(t.isolationWritten.tickMs - t0).toFixed(1)} ms; that pass wrote ${pass.map((w) => `${w.id}=${w.value}`).join(", ")}`);
        }
      }
      return r.sameTrips && (r.identical || a.withConfig !== undefined || a.wasm !== undefined) ? 0 : 1;
    }
    case "trigger": {
      const res = await adminRequest(join(a.stateDir, "admin.sock"), "POST", "/record");
      if (res.status !== 200) throw new Error(typeof res.body.error === "string" ? res.body.error : `the admin socket answered ${res.status}`);
      a.log(`recording ${String(res.body.recording)}: written to ${dir} (the pre-trigger window now, the whole window in a few seconds)`);
      return 0;
    }
    default:
      throw new Error(`recording: list, export <id> --csv [--out <file>], replay <id> [--with-config <file>] [--wasm <file>], or trigger`);
  }
}
