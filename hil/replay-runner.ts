// Runs a HIL scenario against a flight recording, or a captured telemetry log
// (hil/telemetry-replay.ts), instead of the plant: the recording replayed
// into the virtual pod (its field samples through the pod's wiring into the hot path, the
// wiring's writes on the daemon's schedule: agent/recorder/flight-replay.ts, handed in by the
// caller as a ReplaySource, since this stage does not import the agent), with the config and
// build under test. The pod's decisions are sampled every replayed tick and the writes kept, then
// the expectations judged: "this build still isolates the recorded leak within 20 ms".
import type { BankViews } from "../hotpath-as/views.js";
import { podLayout } from "../pod/layout.js";
import type { VirtualPodConfig } from "../sim/virtual-pod.js";
import type { Series } from "./expectations.js";
import type { HilScenario } from "./scenario.js";
import { MAX_SAMPLES, planRun, podReader, supervisorOnly, verdictsOf, type ScenarioRun } from "./virtual-runner.js";

/** A recording, ready to replay: how many ticks, and the replay itself. */
export interface ReplaySource {
  ticks: number;
  /**
   * replays it, calling onTick after every tick; the writes the wiring made, and whether the hot
   * path's outputs came out as recorded (null: nothing was recorded to compare with, a telemetry log)
   */
  run(onTick: (tickMs: number, v: BankViews) => void): { initialWrites: Record<string, number>; writes: { tickMs: number; id: string; value: number }[]; identical: boolean | null };
}

export function runReplay(scenario: HilScenario, pod: VirtualPodConfig, source: ReplaySource): ScenarioRun & { identical: boolean | null } {
  const started = performance.now();
  const plan = planRun(scenario, pod, "a replay", supervisorOnly("a replay"));
  const all = plan.sampled;
  const bad = all.filter((r) => r.source === "truth-rack" || r.source === "truth-cdu");
  if (bad.length > 0) throw new Error(`${scenario.file}: a replay has no plant: ${bad.map((r) => r.name).join(", ")}`);
  const cap = Math.min(source.ticks, Number.isFinite(scenario.durationMs) ? Math.round(scenario.durationMs) : source.ticks);
  if (all.length * cap > MAX_SAMPLES) throw new Error(`${scenario.file}: ${all.length} signals over ${cap} ticks is more than ${MAX_SAMPLES} samples`);
  const lay = podLayout(pod);
  const times = new Float64Array(cap);
  const pods = all.filter((r) => r.source !== "writes").map((r) => ({ ref: r, read: null as (() => number) | null, v: new Float64Array(cap) }));
  let k = 0;
  let t0 = NaN;
  const out = source.run((tickMs, v) => {
    if (k >= cap) return;
    if (k === 0) {
      t0 = tickMs;
      for (const p of pods) p.read = podReader(v, lay, p.ref);
    }
    // scenario time: from the first replayed tick
    times[k] = tickMs - t0;
    for (const p of pods) p.v[k] = (p.read as () => number)();
    k++;
  });
  const n = k;
  const t = times.subarray(0, n);
  const series = new Map<string, Series>();
  for (const p of pods) series.set(p.ref.name, { name: p.ref.name, unit: p.ref.unit, t, v: p.v.subarray(0, n) });
  // a write signal: its level each tick (the first pass's command, then each change) and each write an event
  for (const r of all.filter((x) => x.source === "writes")) {
    const id = r.output as string;
    const events = out.writes.filter((w) => w.id === id).map((w) => ({ tMs: w.tickMs - t0, value: w.value }));
    const v = new Float64Array(n);
    let level = out.initialWrites[id] ?? NaN;
    let e = 0;
    for (let j = 0; j < n; j++) {
      while (e < events.length && events[e].tMs <= t[j]) level = events[e++].value;
      v[j] = level;
    }
    series.set(r.name, { name: r.name, unit: "", t, v, events });
  }
  const endMs = n === 0 ? 0 : t[n - 1];
  const verdicts = verdictsOf(plan, series, endMs);
  return { scenario, mode: "replay", passed: verdicts.every((v) => v.passed), verdicts, series, durationMs: endMs, wallMs: performance.now() - started, identical: out.identical };
}
