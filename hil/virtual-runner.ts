// Runs a HIL scenario in virtual time: the virtual pod (sim/virtual-pod.ts: the daemon's pod
// wiring and the real WASM hot path against the simulator's plant and devices, in lockstep, no
// I/O) with the daemon's supervisor beside it (hil/supervised-pod.ts), its faults and loads from
// the scenario's steps, every signal an expectation reads sampled every tick, then judged. Seeded and deterministic: the same config, seed and scenario give the
// same series and the same verdicts.
import * as L from "../hotpath-as/assembly/layout.js";
import { modbusOutputIds } from "../drivers/modbus/driver.js";
import { ConfigError } from "../lib/config-file.js";
import type { SimConfig } from "../sim/config.js";
import type { VirtualPodConfig } from "../sim/virtual-pod.js";
import { SupervisedPod, VIRTUAL_EVENT_TYPES, virtualAlarm, type SupervisedPodConfig } from "./supervised-pod.js";
import { conditionWords, holds, judge, ms, type Series, type Verdict } from "./expectations.js";
import type { BankViews } from "../hotpath-as/views.js";
import type { PodLayout } from "../pod/layout.js";
import { scenarioPod, type HilScenario, type RunnerStep, type ScenarioExpectation, type WhenStep } from "./scenario.js";
import { expandSignals, type SignalRef } from "./signals.js";

/** A scenario's run: its verdicts, and the series they were judged on (for the report's plots). */
export interface ScenarioRun {
  scenario: HilScenario;
  mode: "virtual" | "replay" | "real-time";
  passed: boolean;
  verdicts: Verdict[];
  series: Map<string, Series>;
  durationMs: number;
  /** wall time the run took, ms (not in the report: the same seed gives the same report) */
  wallMs: number;
  /** real time: the rig's name, and what happened when (each step's injection) */
  rig?: string;
  notes?: string[];
  /** one run of a campaign: the reports name it `<scenario> #<run>`; its seed and I/O phase in virtual time */
  campaign?: { run: number; of: number; seed?: number; ioPhaseMs?: number };
}

/** A run's name in a report: the scenario's, and its number in a campaign. */
export const runName = (r: Pick<ScenarioRun, "scenario" | "campaign">): string => (r.campaign === undefined ? r.scenario.name : `${r.scenario.name} #${r.campaign.run}`);

/** At most this many samples are kept per run (signals × ticks): about 160 MB of series. */
export const MAX_SAMPLES = 20_000_000;

/** The reader of a pod signal (the hot path's decisions) from a bank: the virtual pod's, or a replay's. */
export function podReader(v: BankViews, lay: PodLayout, s: SignalRef): () => number {
  const r = s.rack;
  if (s.source === "pod-cdu") {
    const loop = lay.pumpLoop;
    return s.field === "pumpOut" ? () => v.loopF.out[loop] : () => ((v.loopI.status[loop] & L.LS_INTERLOCK_FAILSAFE) !== 0 ? 1 : 0);
  }
  const loop = lay.rackLoops[r];
  const get: Record<string, () => number> = {
    state: () => v.rackI.state[r],
    // a leak's isolation (the rack's state), or an operator's (the loop's manual-isolate bit)
    isolated: () => (v.rackI.state[r] !== L.RACK_NORMAL || (v.loopI.status[loop] & L.LS_MANUAL_ISOLATE) !== 0 ? 1 : 0),
    supplyOpen: () => v.rackI.supplyOpen[r],
    returnOpen: () => v.rackI.returnOpen[r],
    valveOut: () => v.loopF.out[loop],
    failsafe: () => ((v.loopI.status[loop] & L.LS_INTERLOCK_FAILSAFE) !== 0 ? 1 : 0),
    leak: () => ((v.rackI.status[r] & L.RS_LEAK_WET) !== 0 ? 1 : 0),
  };
  return get[s.field];
}

/** The reader of one signal on a running virtual pod and its supervisor. */
function reader(sp: SupervisedPod, s: SignalRef, lastWrite: Map<string, number>): () => number {
  const vp = sp.vp;
  const p = vp.sim.plant;
  const v = vp.hp.views;
  const lay = vp.layout;
  const r = s.rack;
  switch (s.source) {
    case "truth-rack": {
      const rack = p.racks[r];
      const get: Record<string, () => number> = {
        valvePct: () => rack.controlValve.position,
        supplyIsolationPct: () => rack.supplyIso.position,
        returnIsolationPct: () => rack.returnIso.position,
        flowLpm: () => rack.flowLpm,
        supplyTempC: () => rack.inletTempC,
        returnTempC: () => rack.returnTempC,
        powerKw: () => rack.powerKw,
        powerOff: () => (rack.powerOff ? 1 : 0),
        gpuTempC: () => rack.gpuTempC,
        coolantLostL: () => rack.coolantLostL,
        // no connections in virtual time: planRun skips every expectation on it
        connections: () => NaN,
      };
      return get[s.field];
    }
    case "truth-cdu": {
      const c = p.cdu;
      const get: Record<string, () => number> = {
        dpKpa: () => c.dpKpa,
        pumpSpeedPct: () => c.pumps[0].speedPct,
        pumpEnabled: () => (c.pumps[0].enabled ? 1 : 0),
        supplyTempC: () => c.supplyTempC,
        returnTempC: () => c.returnTempC,
        totalFlowLpm: () => c.totalFlowLpm,
        podPowerKw: () => p.racks.reduce((a, r) => a + r.powerKw, 0),
      };
      return get[s.field];
    }
    case "pod-rack":
    case "pod-cdu":
      return podReader(v, lay, s);
    case "writes": {
      const id = s.output as string;
      return () => lastWrite.get(id) ?? NaN;
    }
    case "alarm": {
      const id = s.key as string;
      return () => (sp.active.has(id) ? 1 : 0);
    }
    case "alarms": {
      const except = s.exceptIds ?? [];
      return () => {
        let n = 0;
        for (const [id, severity] of sp.active) if (severity === s.key && !except.includes(id)) n++;
        return n;
      };
    }
    case "events": {
      const type = s.key as string;
      return () => sp.count(type);
    }
    case "uplink-online":
    case "uplink-alarm":
    case "uplink-events":
    case "uplink-answers":
    case "uplink-telemetry":
      // planRun skips every expectation on them in virtual time
      throw new Error(`${s.name}: the daemon's uplink's, not in virtual time`);
  }
}

/** The device outputs of a pod config, by id (what `writes.` signals may name). */
export function outputIds(pod: VirtualPodConfig): Set<string> {
  return new Set(modbusOutputIds(pod.modbus));
}

/**
 * A scenario's expectations with their signals expanded against a pod (a `*` rack, `except`,
 * an `after` signal), and every signal to sample; throws a ConfigError naming every unknown one
 * (a scenario that does not fit the pod is a bad file, like one that does not fit the schema).
 */
export function scenarioSignals(scenario: HilScenario, pod: VirtualPodConfig): { expectations: (ScenarioExpectation & { refs: SignalRef[] })[]; refs: Map<string, SignalRef>; triggers: Trigger[] } {
  const outputs = outputIds(pod);
  const devices = pod.modbus.devices.map((d) => d.name);
  const refs = new Map<string, SignalRef>();
  const problems: string[] = [];
  const expand = (names: readonly string[], except: readonly string[], where: string): SignalRef[] => {
    try {
      return expandSignals(names, except, pod, outputs, devices, where);
    } catch (err) {
      problems.push((err as Error).message);
      return [];
    }
  };
  const expectations = scenario.expect.map((e, i) => {
    const where = `expect[${i}] (${e.name})`;
    const own = expand(e.signals, e.except, where);
    const after = e.afterSignal === undefined ? [] : expand([e.afterSignal.signal], [], `${where}: after`);
    for (const r of [...own, ...after]) refs.set(r.name, r);
    return { ...e, refs: own };
  });
  const triggers = scenario.whenSteps.flatMap((step): Trigger[] => {
    const where = `steps[${step.index}].when`;
    const got = expand([step.when.signal], [], where);
    if (got.length > 1) problems.push(`${where}: one signal, not ${step.when.signal} (${got.length} of them)`);
    if (got.length !== 1) return [];
    refs.set(got[0].name, got[0]);
    return [{ step, ref: got[0] }];
  });
  if (problems.length > 0) throw new ConfigError(scenario.file, problems);
  return { expectations, refs, triggers };
}

/** A step on a condition, with the one signal it waits on. */
export interface Trigger {
  step: WhenStep;
  ref: SignalRef;
}

/** A step on a condition as the report shows it: a verdict that it happened (when), or did not. */
export function triggerVerdict(t: Trigger, firedAtMs: number | null, endMs: number): Verdict {
  const base = { name: `steps[${t.step.index}] (${JSON.stringify(t.step.action)}) when ${t.ref.name} ${conditionWords(t.step.when.is)}`, kind: "eventually" as const, measured: firedAtMs, window: { fromMs: 0, toMs: endMs }, signals: [t.ref.name] };
  return firedAtMs === null
    ? { ...base, passed: false, figure: "its condition never held by the end of the run: the step was not injected, so what the scenario tests did not happen" }
    : { ...base, passed: true, figure: `held at ${ms(firedAtMs)}: injected ${ms(t.step.delayMs)} later` };
}

/**
 * What a run judges: the scenario's expectations expanded against the pod, those this mode cannot
 * judge (skipped, with why), and the signals the rest read. `why` says, of an expectation's
 * signals, why this mode cannot judge them (null: it can). A scenario of which nothing can be
 * judged is refused: a run that judges nothing must not pass.
 */
export interface RunPlan {
  expectations: (ScenarioExpectation & { refs: SignalRef[] })[];
  skipped: Map<number, string>;
  /** every signal the judged expectations read, `after` signals included, and the steps' `when` signals */
  sampled: SignalRef[];
  /** the steps on conditions */
  triggers: Trigger[];
}

export function planRun(scenario: HilScenario, pod: VirtualPodConfig, mode: string, why: (refs: readonly SignalRef[]) => string | null): RunPlan {
  const { expectations, refs, triggers } = scenarioSignals(scenario, pod);
  const skipped = new Map<number, string>();
  const used = new Set<string>();
  expectations.forEach((e, i) => {
    const all = [...e.refs, ...(e.afterSignal === undefined ? [] : [refs.get(e.afterSignal.signal) as SignalRef])];
    const reason = why(all);
    if (reason !== null) skipped.set(i, reason);
    else for (const r of all) used.add(r.name);
  });
  if (expectations.length > 0 && skipped.size === expectations.length) throw new Error(`${scenario.file}: nothing it expects can be judged in ${mode}: ${[...skipped.values()][0]}`);
  // a step waits on its signal whatever is judged: one this mode cannot read would never fire
  for (const t of triggers) {
    const reason = why([t.ref]);
    if (reason !== null) throw new Error(`${scenario.file}: steps[${t.step.index}] waits on ${t.ref.name}, which ${mode} cannot read (${reason})`);
    used.add(t.ref.name);
  }
  return { expectations, skipped, sampled: [...refs.values()].filter((r) => used.has(r.name)), triggers };
}

/** The plan's verdicts on the sampled series: each skipped one says why; then each step on a condition, fired or not (`firedAtMs`, by trigger). */
export function verdictsOf(plan: RunPlan, series: ReadonlyMap<string, Series>, endMs: number, firedAtMs: readonly (number | null)[] = []): Verdict[] {
  return [...judged(plan, series, endMs), ...plan.triggers.map((t, i) => triggerVerdict(t, firedAtMs[i] ?? null, endMs))];
}

function judged(plan: RunPlan, series: ReadonlyMap<string, Series>, endMs: number): Verdict[] {
  return plan.expectations.map((e, i) => {
    const signals = e.refs.map((r) => r.name);
    const why = plan.skipped.get(i);
    if (why !== undefined) return { name: e.name, kind: e.kind, passed: true, skipped: why, figure: why, measured: null, window: { fromMs: 0, toMs: endMs }, signals };
    return judge({ ...e, signals }, series, endMs);
  });
}

/** What a mode without the daemon cannot judge, whatever its supervisor: mission control's view of the uplink, and connections. */
function noDaemon(mode: string, refs: readonly SignalRef[]): string | null {
  const uplink = refs.filter((r) => r.source.startsWith("uplink-")).map((r) => r.name);
  if (uplink.length > 0) return `skipped in ${mode}: mission control sees the daemon's uplink (${uplink.join(", ")}); real time (--rig) judges it`;
  const wires = refs.filter((r) => r.source === "truth-rack" && r.field === "connections").map((r) => r.name);
  return wires.length === 0 ? null : `skipped in ${mode}: it has no connections (${wires.join(", ")}); real time (--rig) judges it`;
}

/** In a replay: the supervisor's alarms, the daemon's events and its uplink do not exist (the replay has no devices and no supervisor). */
export function supervisorOnly(mode: string): (refs: readonly SignalRef[]) => string | null {
  return (refs) => {
    const names = refs.filter((r) => r.source === "alarm" || r.source === "alarms" || r.source === "events").map((r) => r.name);
    if (names.length > 0) return `skipped in ${mode}: alarms and events are the daemon's supervisor's (${names.join(", ")}); real time (--rig) judges it`;
    return noDaemon(mode, refs);
  };
}

/**
 * In virtual time the daemon's supervisor runs beside the virtual pod (hil/supervised-pod.ts):
 * its alarms and events are judged; an alarm or an event only the daemon has (a state file's,
 * the uplink's, a feature's, an operator's, the control worker's timing) is skipped, saying so.
 */
export function virtualTimeSkips(refs: readonly SignalRef[]): string | null {
  const alarms = refs.filter((r) => r.source === "alarm" && !virtualAlarm(r.key as string)).map((r) => r.name);
  if (alarms.length > 0) return `skipped in virtual time: no source of ${alarms.join(", ")} there (only the supervisor's rack, loop, device, pump and power alarms are); real time (--rig) judges it`;
  const events = refs.filter((r) => r.source === "events" && !VIRTUAL_EVENT_TYPES.includes(r.key as string)).map((r) => r.name);
  if (events.length > 0) return `skipped in virtual time: ${events.join(", ")} are the daemon's, not its supervisor's (${VIRTUAL_EVENT_TYPES.join(", ")}); real time (--rig) judges it`;
  return noDaemon("virtual time", refs);
}

/**
 * A scenario whose steps act on the daemon or on mission control's broker runs only in real
 * time, where the runner owns both; so does one that says `realTime: true` (what it expects
 * holds on the rig and the daemon only).
 */
function refuseDaemonSteps(scenario: HilScenario): void {
  const d = scenario.runnerSteps;
  const words = (x: RunnerStep): string => ("daemon" in x ? `daemon ${x.daemon}` : "broker" in x ? `broker ${x.broker}` : "clock" in x ? `clock ${x.clock}` : "stateFile" in x ? `state file ${x.stateFile.file}` : "config" in x ? `config ${x.config}` : "cpu" in x ? `cpu ${x.cpu ?? "full"}` : "gateway" in x ? `gateway ${x.gateway}` : `command ${x.command.name}`);
  if (d.length > 0) throw new Error(`${scenario.file}: its steps on the daemon, its config, its clock, its state, its broker or its commands (${d.map((x) => `${words(x)} at ${x.atS} s`).join(", ")}) need the real daemon: run it in real time, with --rig`);
  if (scenario.mqttSensors !== undefined) throw new Error(`${scenario.file}: its mqttSensors are read by the daemon's MQTT ingest from the runner's broker: run it in real time, with --rig`);
  if (scenario.realTimeOnly) throw new Error(`${scenario.file}: it says realTime: true (what it expects holds on the rig and the daemon only): run it in real time, with --rig`);
  // a connection reset is a transport's fault: the virtual pod asks its devices with no connection
  const resets = [...scenario.steps.map((s) => s.action), ...scenario.whenSteps.map((s) => s.action)].filter((a) => "device" in a && (a.resetEvery ?? 0) > 0);
  if (resets.length > 0) throw new Error(`${scenario.file}: its connection resets (${resets.map((a) => ("device" in a ? a.device : "")).join(", ")}) need real connections: run it in real time, with --rig`);
}

/**
 * A scenario's `transmitters` racks must read their return temperature through a 4–20 mA point
 * in the pod it runs on (the CLI rewires the config under test: hil-command's scenarioConfig):
 * on a pod that reads the value, a fault on the loop current would change nothing, and the
 * scenario would fail for the wrong reason, or pass.
 */
export function checkTransmitters(scenario: Pick<HilScenario, "transmitters" | "file">, pod: VirtualPodConfig): void {
  const problems = (scenario.transmitters ?? []).flatMap((name) => {
    const rack = pod.racks.find((r) => r.name === name);
    if (rack === undefined) return [`transmitters: no rack "${name}" in the pod`];
    const id = rack.points.returnTempC;
    const [device, point] = typeof id === "string" ? id.split(".", 2) : [];
    const p = pod.modbus.devices.find((d) => d.name === device)?.points.find((x) => x.name === point);
    return p?.loop4to20 !== undefined ? [] : [`transmitters: ${name} reads its return temperature from ${String(id)}, not through a 4–20 mA transmitter (run the scenario with \`podwarden hil run\`, which rewires the config under test)`];
  });
  if (problems.length > 0) throw new ConfigError(scenario.file, problems);
}

/** Checks a scenario's signals against a pod without running it; throws naming every unknown one, or when virtual time can judge none of it. */
export function checkScenario(scenario: HilScenario, pod: VirtualPodConfig): void {
  refuseDaemonSteps(scenario);
  checkTransmitters(scenario, pod);
  scenarioPod(scenario, pod);
  if (scenario.replay === undefined) planRun(scenario, pod, "virtual time", virtualTimeSkips);
  else planRun(scenario, pod, "a replay", supervisorOnly("a replay"));
}

/** How a campaign's run differs from the scenario as written (hil/campaign.ts). */
export interface VirtualRunOptions {
  /** the plant's seed, over the scenario's */
  seed?: number;
  /**
   * how far into its period each of the pod's polls and heartbeats starts (ms), so that they meet
   * the steps at another phase: what makes a time-to-safe figure vary run to run, as it does on a
   * rig, where a fault lands anywhere in a poll period
   */
  ioPhaseMs?: number;
}

export function runVirtual(scenario: HilScenario, sim: SimConfig, base: SupervisedPodConfig, o: VirtualRunOptions = {}): ScenarioRun {
  checkTransmitters(scenario, base);
  const started = performance.now();
  const pod = scenarioPod(scenario, base);
  const phase = o.ioPhaseMs ?? 0;
  if (!(phase >= 0 && phase <= 60_000 && Number.isInteger(phase))) throw new Error(`I/O phase ${phase} ms: a whole number of ms, 0 to 60000`);
  if (scenario.replay !== undefined) throw new Error(`${scenario.file}: a replay scenario (hil/replay-runner.ts)`);
  refuseDaemonSteps(scenario);
  const plan = planRun(scenario, pod, "virtual time", virtualTimeSkips);
  const ticks = Math.round(scenario.durationMs);
  if (plan.sampled.length * ticks > MAX_SAMPLES) throw new Error(`${scenario.file}: ${plan.sampled.length} signals over ${ticks} ticks is more than ${MAX_SAMPLES} samples: shorten it, or split it`);

  const sp = new SupervisedPod(sim, pod, { seed: o.seed ?? scenario.seed, steps: scenario.steps }, { recordWrites: true, traceEveryS: 3600, ioPhaseMs: phase });
  const vp = sp.vp;
  const lastWrite = new Map<string, number>();
  const events = new Map<string, { tMs: number; value: number }[]>();
  for (const r of plan.sampled) if (r.output !== undefined) events.set(r.output, []);
  // a sample a tick, into arrays sized for the run up front
  const n = Math.round(scenario.durationMs);
  const sampled = plan.sampled.map((r) => ({ ref: r, read: reader(sp, r, lastWrite), v: new Float64Array(n) }));
  const times = new Float64Array(n);
  let k = 0;
  let seen = 0;
  // the steps on conditions: each fires once, at the first tick its signal meets its condition
  const triggers = plan.triggers.map((t) => ({ t, read: sampled.find((x) => x.ref.name === t.ref.name)?.read ?? reader(sp, t.ref, lastWrite), firedAt: null as number | null, dueMs: Infinity, done: false }));
  // each supervisor event of a sampled events.<type> signal is an event of its series, for count
  const eventSeries = new Map<string, { tMs: number; value: number }[]>();
  for (const r of plan.sampled) if (r.source === "events") eventSeries.set(r.key as string, []);
  let eventsSeen = 0;
  sp.run(scenario.durationMs / 1000, () => {
    for (; eventsSeen < sp.events.length; eventsSeen++) eventSeries.get(sp.events[eventsSeen].type)?.push({ tMs: vp.timeMs, value: 1 });
    // the writes the last tick sent: each one an event, the last one the level
    for (; seen < vp.writes.length; seen++) {
      const w = vp.writes[seen];
      lastWrite.set(w.id, w.value);
      events.get(w.id)?.push({ tMs: w.tMs, value: w.value });
    }
    const now = vp.timeMs;
    for (const x of triggers) {
      if (x.firedAt === null && holds(x.t.step.when.is, x.read())) {
        x.firedAt = now;
        x.dueMs = now + x.t.step.delayMs;
      }
      if (!x.done && now >= x.dueMs) {
        vp.sim.inject(x.t.step.action);
        x.done = true;
      }
    }
    if (k >= n) return;
    times[k] = now;
    for (const s of sampled) s.v[k] = s.read();
    k++;
  });
  const series = new Map<string, Series>();
  for (const s of sampled) {
    const discrete = s.ref.output !== undefined ? events.get(s.ref.output) : s.ref.source === "events" ? eventSeries.get(s.ref.key as string) : undefined;
    series.set(s.ref.name, { name: s.ref.name, unit: s.ref.unit, t: times, v: s.v, ...(discrete === undefined ? {} : { events: discrete }) });
  }
  const endMs = n === 0 ? 0 : times[n - 1];
  const verdicts = verdictsOf(plan, series, endMs, triggers.map((x) => x.firedAt));
  return { scenario, mode: "virtual", passed: verdicts.every((v) => v.passed), verdicts, series, durationMs: endMs, wallMs: performance.now() - started };
}
