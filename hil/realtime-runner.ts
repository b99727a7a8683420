// Runs a HIL scenario in real time: the real daemon (`podwarden run`, started fresh for the
// scenario by the caller, since this stage does not import the agent or the CLI) against a rig,
// which may be the simulator in its own process reached only through its Modbus devices and its
// fault API (configs/hil/rigs/sim-pod.yaml) or real hardware. The rig adapter (hil/rig.ts) says
// how each step is injected and where the ground truth comes from.
//
// Every `sampleMs` the runner reads the pod's state from the daemon's admin socket and the
// rig's truth, and stamps each with the monotonic time its answer arrived: a figure's
// resolution is the sample period plus one request (a few ms on loopback). The alarm and event
// signals come from the daemon's own events (its log), stamped as they arrive; the uplink.* ones
// from mission control's side of the runner's own broker (hil/mission-control.ts). Device writes are
// not observable from outside the daemon, so expectations on writes.* signals are skipped, with
// the reason in the report, as are truth.* ones on a rig without a truth source. A real rig
// cannot be seeded: the same scenario gives close, not identical, figures run to run.
import * as L from "../hotpath-as/assembly/layout.js";
import { readResponseBounded } from "../lib/bounded-read.js";
import type { PumpStatus, RackStatus } from "../pod/status-view.js";
import type { VirtualPodConfig } from "../sim/virtual-pod.js";
import { holds, type Series } from "./expectations.js";
import { startMissionControl, type MissionControl, type TrustedKey, type UplinkObservation } from "./mission-control.js";
import { inject, injectorFor, type Prompt, type RigAdapter } from "./rig.js";
import { startSensorGateway, type SensorGateway } from "./sensor-gateway.js";
import type { BrokerAction, ConfigAction, DaemonAction, HilScenario, StateDamage, StateFile } from "./scenario.js";
import type { SignalRef, SignalSource } from "./signals.js";
import { MAX_SAMPLES, planRun, verdictsOf, type RunPlan, type ScenarioRun } from "./virtual-runner.js";

/** The part of the daemon's GET /status the pod signals read. */
export interface PodView {
  racks: Pick<RackStatus, "name" | "isolation" | "supplyIsolationOpen" | "returnIsolationOpen" | "valvePct" | "loopStatus" | "rackStatus">[];
  pump: Pick<PumpStatus, "speedCmdPct" | "loopStatus">;
}

/** One of the daemon's events (its log's `event`), stamped with performance.now() when it arrived. */
export interface DaemonEvent {
  atMs: number;
  type: string;
  /** alarm.*: the alarm as it is now (an escalated one has its new severity) */
  alarm?: { id: string; severity: string };
}

/** The daemon under test, started for one scenario. */
export interface RunningDaemon {
  /** the pod's state now; undefined when the daemon did not answer within timeoutMs (dead, stopped) */
  status: (timeoutMs: number) => Promise<PodView | undefined>;
  /** a daemon step: a signal to its process, a restart once it has exited, or a start that must be refused; resolves to what came of it, in words, where there is more to say */
  act: (action: DaemonAction) => Promise<string | void>;
  /** holds its process to this share of one CPU (a `cpu` step); null lifts the limit, saying how much the limit held it back */
  setCpu: (share: number | null) => string | void;
  /** sets its wall clock this far from the true time (libfaketime's offset: +1d, -2h, +0); only when started with `fakeClock` */
  setClock: (offset: string) => void;
  /** a bad edit over its config file, or the good one back (a `config` step) */
  editConfig: (action: ConfigAction) => void;
  /** damages one of its state files (a `stateFile` step) */
  damageState: (file: StateFile, damage: StateDamage) => void;
  /** every event since it started, in order */
  events: () => readonly DaemonEvent[];
  /** stops it (SIGTERM, and SIGKILL if it does not exit) */
  stop: () => Promise<void>;
}

export interface RealTimeDeps {
  /**
   * starts the daemon on the rig and resolves once it runs; with an uplink to `uplinkUrl` where
   * given, trusting `commandKey` (an engineer's) for signed commands, and the scenario's `control`
   * patch over its config's, its `transmitters` racks read through their 4–20 mA transmitter and its `mqttSensors` racks from the runner's broker (sensor-gateway.ts); with `fakeClock`, on a wall clock the runner can move (a `clock` step); with `hooks`, with the runner's hook in its process (hil/daemon-hooks.ts: an `end-leak-thread` step); its uplink's `spool` the scenario's
   */
  startDaemon: (o: { uplinkUrl?: string; commandKey?: TrustedKey; spool?: HilScenario["spool"]; mqttSensors?: string[]; control?: Record<string, unknown>; transmitters?: string[]; fakeClock?: boolean; hooks?: boolean }) => Promise<RunningDaemon>;
  /** asks the operator to do something by hand, resolves when they confirm, rejects once `until` aborts */
  prompt: Prompt;
  log: (line: string) => void;
}

/** The truth a rig serves: the simulator's GET /truth shape (the fields the signals read). */
interface TruthJson {
  racks: (Record<string, unknown> & { name: string })[];
  cdu: Record<string, unknown>;
}

const ISOLATION_CODE: Record<string, number> = { Normal: L.RACK_NORMAL, Isolating: L.RACK_ISOLATING, Isolated: L.RACK_ISOLATED, Escalated: L.RACK_ESCALATED };

const num = (x: unknown): number => (typeof x === "number" ? x : typeof x === "boolean" ? (x ? 1 : 0) : NaN);

/** The reader of a pod signal from the daemon's status (NaN when it did not answer). */
function podStatusReader(s: SignalRef): (p: PodView | undefined) => number {
  const failsafe = (status: number): number => ((status & L.LS_INTERLOCK_FAILSAFE) !== 0 ? 1 : 0);
  if (s.source === "pod-cdu") return s.field === "pumpOut" ? (p) => p?.pump.speedCmdPct ?? NaN : (p) => (p === undefined ? NaN : failsafe(p.pump.loopStatus));
  const r = s.rack;
  const get: Record<string, (x: PodView["racks"][number]) => number> = {
    state: (x) => ISOLATION_CODE[x.isolation] ?? NaN,
    // a leak's isolation, or an operator's: the same bits as virtual time reads
    isolated: (x) => (x.isolation !== "Normal" || (x.loopStatus & L.LS_MANUAL_ISOLATE) !== 0 ? 1 : 0),
    supplyOpen: (x) => (x.supplyIsolationOpen ? 1 : 0),
    returnOpen: (x) => (x.returnIsolationOpen ? 1 : 0),
    valveOut: (x) => x.valvePct,
    failsafe: (x) => failsafe(x.loopStatus),
    leak: (x) => ((x.rackStatus & L.RS_LEAK_WET) !== 0 ? 1 : 0),
  };
  const f = get[s.field];
  return (p) => (p === undefined || p.racks[r] === undefined ? NaN : f(p.racks[r]));
}

/** The reader of a truth signal from the rig's truth (NaN when it did not answer, or has no such field). */
function truthReader(s: SignalRef, rackName: string): (t: TruthJson | undefined) => number {
  if (s.source === "truth-cdu" && s.field === "podPowerKw") return (t) => (t === undefined ? NaN : t.racks.reduce((a, r) => a + num(r.powerKw), 0));
  if (s.source === "truth-cdu") return (t) => num(t?.cdu[s.field]);
  return (t) => num(t?.racks.find((x) => x.name === rackName)?.[s.field]);
}

/** The sensor gateway's read of the truth gives up after this: it publishes nothing for that period. */
const GATEWAY_TRUTH_TIMEOUT_MS = 200;

/** A rig's answer is read up to this size before it is parsed: an 8-rack truth is ~6 kB. */
const MAX_TRUTH_BYTES = 1024 * 1024;

async function readTruth(url: string, timeoutMs: number): Promise<TruthJson | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return undefined;
    const t = JSON.parse(await readResponseBounded(res, MAX_TRUTH_BYTES)) as TruthJson;
    return Array.isArray(t.racks) && typeof t.cdu === "object" && t.cdu !== null ? t : undefined;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** Why an expectation cannot be judged on this rig in real time, or null. */
function unobservable(rig: RigAdapter): (refs: readonly SignalRef[]) => string | null {
  return (refs) => {
    const writes = refs.filter((r) => r.source === "writes").map((r) => r.name);
    if (writes.length > 0) return `skipped in real time: a device write is seen only inside the daemon (${writes.join(", ")}); virtual time judges it`;
    const truth = refs.filter((r) => r.source === "truth-rack" || r.source === "truth-cdu").map((r) => r.name);
    if (truth.length > 0 && rig.truth === undefined) return `skipped: the rig "${rig.name}" has no truth source (${truth.join(", ")})`;
    return null;
  };
}

/**
 * The scenario's expectations that real time can judge on this rig, and every signal they read;
 * throws when a step cannot be injected or nothing can be judged.
 */
export function realTimePlan(scenario: HilScenario, pod: VirtualPodConfig, rig: RigAdapter): RunPlan {
  if (scenario.replay !== undefined) throw new Error(`${scenario.file}: a replay scenario runs on its recording, not in real time`);
  for (const s of [...scenario.steps, ...scenario.whenSteps]) {
    injectorFor(rig, s.action);
    // line noise acts on a serial line: on a device the rig reaches over TCP it would do nothing, and the scenario pass for nothing
    const a = s.action as { device?: string; lineNoisePct?: number };
    if (a.device !== undefined && (a.lineNoisePct ?? 0) > 0 && rig.devices[a.device]?.serial === undefined) {
      throw new Error(`${scenario.file}: a lineNoisePct step: line noise on ${a.device} needs the rig to reach it over a serial line (devices.${a.device}.serial in ${rig.file})`);
    }
  }
  const plan = planRun(scenario, pod, `real time on the rig "${rig.name}"`, unobservable(rig));
  // a step's condition is read as the samples arrive: the alarms, events and mission control's
  // view are put together from their logs once the run is over
  for (const t of plan.triggers) {
    if (!["pod-rack", "pod-cdu", "truth-rack", "truth-cdu"].includes(t.ref.source)) throw new Error(`${scenario.file}: steps[${t.step.index}] waits on ${t.ref.name}: in real time a step waits on a pod. or truth. signal`);
  }
  return plan;
}

/** An entry of a log that counts as an event: the signals of `source` whose key is `type` count it. */
interface LogEvent {
  source: SignalSource;
  type: string;
}

/**
 * Levels at the sample times `t`, and events for `count`, from a log stamped with
 * performance.now(): `apply` takes in each entry up to each sample (those before time 0 too:
 * what held at 0 is the state they left), and an entry's event (`eventOf`) is counted, and
 * kept as an event of the signals of its source and type, from time 0 on.
 */
function seriesFromLog<E extends { atMs: number }>(
  refs: readonly SignalRef[],
  log: readonly E[],
  t0: number,
  t: Float64Array,
  o: { apply: (e: E) => void; eventOf: (e: E) => LogEvent | undefined; eventSources: readonly SignalSource[]; level: (r: SignalRef, count: (source: SignalSource, type: string) => number) => number },
): Series[] {
  const counts = new Map<string, number>();
  const count = (source: SignalSource, type: string): number => counts.get(`${source} ${type}`) ?? 0;
  const out = refs.map((r) => ({ ref: r, v: new Float64Array(t.length), events: [] as { tMs: number; value: number }[] }));
  let e = 0;
  for (let k = 0; k < t.length; k++) {
    for (; e < log.length && log[e].atMs - t0 <= t[k]; e++) {
      const x = log[e];
      o.apply(x);
      const ev = o.eventOf(x);
      const rel = x.atMs - t0;
      if (ev === undefined || rel < 0) continue;
      counts.set(`${ev.source} ${ev.type}`, count(ev.source, ev.type) + 1);
      for (const s of out) if (s.ref.source === ev.source && s.ref.key === ev.type) s.events.push({ tMs: rel, value: 1 });
    }
    for (const s of out) s.v[k] = o.level(s.ref, count);
  }
  return out.map((s) => ({ name: s.ref.name, unit: s.ref.unit, t, v: s.v, ...(o.eventSources.includes(s.ref.source) ? { events: s.events } : {}) }));
}

/**
 * The alarm and event signals over a run, from the daemon's events: levels at the sample times
 * `t` (the state before time 0 included: an alarm raised while the pod settled is active at 0),
 * and for events.<type> each event after time 0 as an event for `count`.
 */
export function eventSeries(refs: readonly SignalRef[], events: readonly DaemonEvent[], t0: number, t: Float64Array): Series[] {
  const active = new Map<string, string>(); // id -> severity
  return seriesFromLog(refs, events, t0, t, {
    apply: (ev) => {
      if (ev.alarm !== undefined && (ev.type === "alarm.raised" || ev.type === "alarm.escalated")) active.set(ev.alarm.id, ev.alarm.severity);
      if (ev.alarm !== undefined && ev.type === "alarm.cleared") active.delete(ev.alarm.id);
    },
    eventOf: (ev) => ({ source: "events", type: ev.type }),
    eventSources: ["events"],
    level: (r, count) => {
      if (r.source === "alarm") return active.has(r.key as string) ? 1 : 0;
      if (r.source === "alarms") {
        let n = 0;
        for (const [id, sev] of active) if (sev === r.key && !(r.exceptIds ?? []).includes(id)) n++;
        return n;
      }
      return count("events", r.key as string);
    },
  });
}

/** A broker step on the runner's own broker. */
function brokerStep(mc: MissionControl, action: BrokerAction): Promise<void> {
  if (action === "down") return mc.down();
  if (action === "up") return mc.up();
  if (action === "hang") mc.hang();
  else if (action === "resume") mc.resume();
  else if (action === "partition") mc.partition();
  else if (action === "lossy") mc.lossy();
  else if (action === "hostile") mc.hostile();
  else mc.heal();
  return Promise.resolve();
}

/**
 * The uplink signals over a run, from what mission control saw: levels at the sample times `t`
 * (what it saw before time 0 included), and for uplink.events.<type>, uplink.answers.<outcome> and uplink.telemetry.*
 * each event or answer received after time 0 as an event for `count`.
 */
export function uplinkSeries(refs: readonly SignalRef[], seen: readonly UplinkObservation[], t0: number, t: Float64Array): Series[] {
  let online = 0;
  let alarms = new Set<string>();
  return seriesFromLog(refs, seen, t0, t, {
    apply: (o) => {
      if (o.online !== undefined) online = o.online ? 1 : 0;
      if (o.alarms !== undefined) alarms = new Set(o.alarms);
    },
    eventOf: (o) =>
      o.event !== undefined ? { source: "uplink-events", type: o.event } : o.answer !== undefined ? { source: "uplink-answers", type: o.answer } : o.telemetry !== undefined ? { source: "uplink-telemetry", type: o.telemetry } : undefined,
    eventSources: ["uplink-events", "uplink-answers", "uplink-telemetry"],
    level: (r, count) => (r.source === "uplink-online" ? online : r.source === "uplink-alarm" ? (alarms.has(r.key as string) ? 1 : 0) : count(r.source, r.key as string)),
  });
}

export async function runRealTime(scenario: HilScenario, pod: VirtualPodConfig, rig: RigAdapter, deps: RealTimeDeps): Promise<ScenarioRun> {
  const started = performance.now();
  const plan = realTimePlan(scenario, pod, rig);
  const durationMs = scenario.durationMs;
  const expected = Math.ceil(durationMs / rig.sampleMs) + 1;
  if (plan.sampled.length * expected > MAX_SAMPLES) throw new Error(`${scenario.file}: ${plan.sampled.length} signals every ${rig.sampleMs} ms for ${durationMs / 1000} s is more than ${MAX_SAMPLES} samples`);
  const racks = pod.racks.map((r) => r.name);
  const pods = plan.sampled.filter((r) => r.source === "pod-rack" || r.source === "pod-cdu").map((r) => ({ ref: r, read: podStatusReader(r), v: [] as number[] }));
  const truths = plan.sampled.filter((r) => r.source === "truth-rack" || r.source === "truth-cdu").map((r) => ({ ref: r, read: truthReader(r, racks[r.rack] ?? ""), v: [] as number[] }));
  const fromEvents = plan.sampled.filter((r) => r.source === "alarm" || r.source === "alarms" || r.source === "events");
  const fromUplink = plan.sampled.filter((r) => r.source.startsWith("uplink-"));
  // the status is read whenever a pod, an event or an uplink signal is judged: their levels take its times
  const readStatus = pods.length > 0 || fromEvents.length > 0 || fromUplink.length > 0;
  const podT: number[] = [];
  const truthT: number[] = [];

  if (rig.clear !== undefined) await inject(rig.clear, { clear: "all" }, deps.prompt);
  const oversized = scenario.runnerSteps.flatMap((x) => ("command" in x && x.command.as === "oversized" ? [x.command.name] : []));
  const mc: MissionControl | undefined = scenario.uplink ? await startMissionControl({ oversized }) : undefined;
  let daemon: RunningDaemon;
  let gateway: SensorGateway | undefined;
  try {
    const sensors = scenario.mqttSensors;
    if (sensors !== undefined && mc !== undefined) {
      const truth = rig.truth;
      if (truth === undefined) throw new Error(`${scenario.file}: mqttSensors: the gateway publishes the rig's truth, and the rig "${rig.name}" has none`);
      const read = async (): Promise<Map<string, number> | undefined> => {
        const t = await readTruth(truth.url, GATEWAY_TRUTH_TIMEOUT_MS);
        return t === undefined ? undefined : new Map(t.racks.map((r) => [r.name, num(r.returnTempC)] as const).filter(([, v]) => Number.isFinite(v)));
      };
      gateway = await startSensorGateway({ url: mc.url, racks: sensors, read });
    }
    const fakeClock = scenario.runnerSteps.some((x) => "clock" in x);
    const hooks = scenario.runnerSteps.some((x) => "daemon" in x && x.daemon === "end-leak-thread");
    daemon = await deps.startDaemon({ ...(mc === undefined ? {} : { uplinkUrl: mc.url, commandKey: mc.trustedKey, spool: scenario.spool }), ...(sensors === undefined ? {} : { mqttSensors: sensors }), control: scenario.control, ...(scenario.transmitters === undefined ? {} : { transmitters: scenario.transmitters }), fakeClock, hooks });
  } catch (err) {
    await gateway?.stop();
    await mc?.stop();
    throw err;
  }
  const notes: string[] = [];
  let t0 = NaN;
  let firedAtMs: (number | null)[] | undefined;
  try {
    if (rig.settleS > 0) {
      deps.log(`  the pod settles for ${rig.settleS} s`);
      await sleep(rig.settleS * 1000);
    }
    t0 = performance.now();
    const now = (): number => performance.now() - t0;
    let done = false;
    // the steps, the rig's faults and the daemon's own, each at its time (a manual one waits for
    // the operator; the next waits for it)
    // a manual step not done by the end of the run is given up, and fails it
    const ended = new AbortController();
    const timeline: { atS: number; what: string; run: () => Promise<string | void>; background?: true }[] = [
      ...scenario.steps.map((s) => ({ atS: s.atS, what: JSON.stringify(s.action), run: () => inject(injectorFor(rig, s.action), s.action, deps.prompt, ended.signal) })),
      ...scenario.runnerSteps.map((s) => {
        if ("daemon" in s) return { atS: s.atS, what: `daemon ${s.daemon}`, run: () => daemon.act(s.daemon) };
        if ("clock" in s) return { atS: s.atS, what: `clock ${s.clock}`, run: () => Promise.resolve(daemon.setClock(s.clock)) };
        if ("cpu" in s) return { atS: s.atS, what: `cpu ${s.cpu ?? "full"}`, run: () => Promise.resolve(daemon.setCpu(s.cpu)) };
        if ("config" in s) return { atS: s.atS, what: `config ${s.config}`, run: () => Promise.resolve(daemon.editConfig(s.config)) };
        if ("stateFile" in s) return { atS: s.atS, what: `state file ${s.stateFile.file} ${s.stateFile.damage}`, run: () => Promise.resolve(daemon.damageState(s.stateFile.file, s.stateFile.damage)) };
        const needMc = (): MissionControl => {
          if (mc === undefined) throw new Error("no broker: the scenario has no uplink");
          return mc;
        };
        if ("broker" in s) return { atS: s.atS, what: `broker ${s.broker}`, run: () => brokerStep(needMc(), s.broker) };
        if ("gateway" in s)
          return {
            atS: s.atS,
            what: `gateway ${s.gateway}`,
            run: () => {
              if (gateway === undefined) throw new Error("no sensor gateway: the scenario has no mqttSensors");
              return gateway.act(s.gateway);
            },
          };
        const c = s.command;
        const what = `command ${c.name} ${JSON.stringify(c.params)} ${c.as}${c.times > 1 ? ` x${c.times}${c.perS === undefined ? "" : ` at ${c.perS}/s`}` : ""}`;
        // a flood goes on while the next steps happen (a leak during it): it runs in the background
        return { atS: s.atS, what, run: () => needMc().send(c, ended.signal), ...(c.times > 1 ? { background: true as const } : {}) };
      }),
    ].sort((a, b) => a.atS - b.atS);
    const background: Promise<void>[] = [];
    let stepError: Error | null = null;
    // a step done, and when it was asked for and done, in the output and the report
    const doStep = async (what: string, run: () => Promise<string | void>): Promise<void> => {
      const asked = now();
      const came = await run();
      const note = `${what} injected at ${(asked / 1000).toFixed(3)} s, done at ${(now() / 1000).toFixed(3)} s${typeof came === "string" ? `: ${came}` : ""}`;
      notes.push(note);
      deps.log(`  ${note}`);
    };
    const steps = (async (): Promise<void> => {
      for (const s of timeline) {
        await sleep(s.atS * 1000 - now());
        if (done) return;
        const step = doStep(`step at ${s.atS} s: ${s.what}`, s.run);
        if (s.background === true)
          background.push(
            step.catch((err: Error) => {
              stepError = err;
            }),
          );
        else await step;
      }
    })().catch((err: Error) => {
      // a step that could not be done ends the run: what follows would not be the scenario
      stepError = err;
    });
    // the steps on conditions: each fires once, at the first sample its signal meets its
    // condition, and is injected `delay` later as a timed step is
    const read = [...pods, ...truths];
    const triggers = plan.triggers.map((t) => ({ t, s: read.find((x) => x.ref.name === t.ref.name), firedAt: null as number | null }));
    const fired: Promise<void>[] = [];
    const fire = async (x: (typeof triggers)[number], heldAt: number): Promise<void> => {
      await sleep(heldAt + x.t.step.delayMs - now());
      if (done) return;
      const { index, action } = x.t.step;
      await doStep(`step ${index} when ${x.t.ref.name}: held at ${(heldAt / 1000).toFixed(3)} s, ${JSON.stringify(action)}`, () => inject(injectorFor(rig, action), action, deps.prompt, ended.signal));
    };
    // the samples: both sources at once, each stamped when its answer arrived
    const timeout = Math.max(50, rig.sampleMs * 5);
    while (now() <= durationMs && stepError === null) {
      const tick = now();
      const [p, t] = await Promise.all([
        readStatus ? daemon.status(timeout).then((x) => ({ x, at: now() })) : undefined,
        truths.length === 0 || rig.truth === undefined ? undefined : readTruth(rig.truth.url, timeout).then((x) => ({ x, at: now() })),
      ]);
      if (p !== undefined) {
        podT.push(p.at);
        for (const s of pods) s.v.push(s.read(p.x));
      }
      if (t !== undefined) {
        truthT.push(t.at);
        for (const s of truths) s.v.push(s.read(t.x));
      }
      for (const x of triggers) {
        const v = x.s?.v[x.s.v.length - 1];
        if (x.firedAt !== null || v === undefined || !holds(x.t.step.when.is, v)) continue;
        x.firedAt = (x.s?.ref.source.startsWith("truth") === true ? t?.at : p?.at) ?? now();
        fired.push(
          fire(x, x.firedAt).catch((err: Error) => {
            stepError = err;
          }),
        );
      }
      await sleep(rig.sampleMs - (now() - tick));
    }
    done = true;
    ended.abort();
    await steps;
    await Promise.all(fired);
    await Promise.all(background);
    firedAtMs = triggers.map((x) => x.firedAt);
    if (stepError !== null) throw new Error(`${scenario.file}: a step failed at ${(now() / 1000).toFixed(3)} s, so the run stopped: ${(stepError as Error).message}`);
  } finally {
    await daemon.stop();
    await gateway?.stop();
    await mc?.stop();
    if (rig.clear !== undefined) await inject(rig.clear, { clear: "all" }, deps.prompt).catch((err: Error) => deps.log(`  clearing the rig's faults failed: ${err.message}`));
  }

  const series = new Map<string, Series>();
  const pt = Float64Array.from(podT);
  const tt = Float64Array.from(truthT);
  for (const s of pods) series.set(s.ref.name, { name: s.ref.name, unit: s.ref.unit, t: pt, v: Float64Array.from(s.v) });
  for (const s of truths) series.set(s.ref.name, { name: s.ref.name, unit: s.ref.unit, t: tt, v: Float64Array.from(s.v) });
  for (const s of eventSeries(fromEvents, daemon.events(), t0, pt)) series.set(s.name, s);
  if (mc !== undefined) for (const s of uplinkSeries(fromUplink, mc.observations(), t0, pt)) series.set(s.name, s);
  const endMs = Math.max(pt.length === 0 ? 0 : pt[pt.length - 1], tt.length === 0 ? 0 : tt[tt.length - 1]);
  const verdicts = verdictsOf(plan, series, endMs, firedAtMs ?? []);
  return { scenario, mode: "real-time", passed: verdicts.every((v) => v.passed), verdicts, series, durationMs: endMs, wallMs: performance.now() - started, notes, rig: rig.name };
}
