// The agent: owns the pod controller's lifecycle (start safe, keep device leases only while
// healthy, stop safe) and wires the parts together: the field drivers into one point store,
// the pod stage's wiring between the points, the control worker and the actuators, and the
// supervisor. It hands each service the narrow face it needs (pod-api.ts) and speaks no protocol.
import * as L from "../hotpath-as/assembly/layout.js";
import type { LoopMode } from "../hotpath-as/bank-config.js";
import { ModbusDriver, type OutputState } from "../drivers/modbus/driver.js";
import { splitModbus } from "../drivers/modbus/split.js";
import { MqttIngest } from "../drivers/mqtt-ingest.js";
import { RedfishDriver } from "../drivers/redfish/driver.js";
import { Backoff } from "../lib/backoff.js";
import { Listeners } from "../lib/listeners.js";
import { monoMs } from "../lib/clock.js";
import { JsonStateFile } from "../lib/json-state-file.js";
import { measuredValue, PointStore, type Point } from "../lib/points.js";
import { defaultSetpoints, podBankSpec, type LoopGains } from "../pod/bank.js";
import { leaseFailWrites } from "../pod/fail-safe.js";
import { bankPointIds, podLayout, type PodLayout } from "../pod/layout.js";
import { pumpStatus, rackStatuses, type ValveHealthView } from "../pod/status-view.js";
import { qualityWords } from "../pod/status-words.js";
import { ACTUATOR_PASS_MS, PodWiring, type OutputSink, type PodDecisions } from "../pod/wiring.js";
import { join } from "node:path";
import { commandLimits, executeCommand } from "./commands/executor.js";
import type { AgentConfig, LoadedConfig } from "./config/load.js";
import { ControlThread, type ControlOutputs } from "./control/control-thread.js";
import { LeakThread } from "./control/leak-thread.js";
import type { IsoValve, StrokeResult } from "./health/isolation-stroke.js";
import { IsolationStrokes, type StrokeStatus } from "./health/isolation-strokes.js";
import { FlightRecorder, ringFor, tripOf } from "./recorder/flight-recorder.js";
import { recentSummaries, type RecordingEntry } from "./recorder/recording-file.js";
import { packageVersion } from "./version.js";
import { sameStructure, stateDirOf, type CarriedState } from "./lifecycle.js";
import { LatchStore } from "./latch-store.js";
import { describeOperatorState, EMPTY_OPERATOR_STATE, OperatorStore, type OperatorState } from "./operator-state.js";
import type { Logger, Logs } from "./log.js";
import type { AgentEvent, AppliedGains, AuditRecord, CommandLimits, CommandRequest, LoopGainsStatus, Outcome, PodCommander, PodCommands, PodDiagnostics, PodIdentity, PodReader, PodStatus, ProblemReport, ProblemReporter, RackLoad, Range, RecordingSummary, TuningStatus } from "./pod-api.js";
import { GainsStore } from "./tuning/gains-store.js";
import { ValveHealth } from "./health/valve-health.js";
import { LoopTunings } from "./tuning/loop-tuning.js";
import { noCoolantLimitKw } from "../pod/config.js";
import { ProblemRegistry } from "./problems.js";
import { TickWindow } from "./control/tick-window.js";
import { PassLateness } from "./control/pass-lateness.js";
import type { Alarm } from "./supervisor/alarms.js";
import { LoopLeases } from "./supervisor/setpoints.js";
import { Supervisor, type PodMode, type Reading } from "./supervisor/supervisor.js";

export type { AgentEvent, PodStatus, ProblemReport } from "./pod-api.js";
export { identityChange, sameStructure, stateDirOf, type CarriedState } from "./lifecycle.js";

function checkBudgetFile(data: unknown): { podKw: number | null } {
  const kw = (data as { podKw?: unknown } | null)?.podKw;
  if (kw !== null && (typeof kw !== "number" || !Number.isFinite(kw) || kw < 0)) throw new Error("podKw is not a budget");
  return { podKw: kw };
}

/**
 * How often the leak thread reports its points, output states and counters to the main thread,
 * ms: status and telemetry see a leak input at most this late (the isolation does not wait).
 */
const LEAK_REPORT_MS = 50;

/**
 * How long a Redfish Control may stay unverified before it is an alarm, ms: a PATCH and its
 * read-back take two round trips (a few ms on a healthy BMC; the client's timeout bounds each).
 */
const UNVERIFIED_GRACE_MS = 5000;

export class Agent implements PodReader, PodCommander, PodCommands, PodDiagnostics, ProblemReporter {
  readonly config: AgentConfig;
  readonly configHash: string;
  readonly identity: PodIdentity;
  readonly layout: PodLayout;
  /** every field point, from every driver */
  readonly points = new PointStore();
  readonly driver: ModbusDriver;
  readonly ingest: MqttIngest | null;
  /** rack BMCs over Redfish (null: none configured) */
  readonly redfish: RedfishDriver | null;
  readonly supervisor: Supervisor;
  /** leased setpoints, by loop */
  readonly leases = new LoopLeases();
  /** leased Override outputs, by loop: each sits over the loop's persistent mode */
  readonly overrides = new LoopLeases();
  control!: ControlThread;
  /** the leak inputs and isolation valves of TCP devices, on a thread of their own (null: off, or none) */
  private readonly leakThread: LeakThread | null;
  private readonly wiring: PodWiring;
  /** the devices' own fail positions, as the config declares them (pod/fail-safe.ts) */
  private leaseFail: { id: string; value: number }[];
  /** leak inputs and isolation outputs the leak thread could not take (serial devices) */
  private readonly leakLeft: string[];
  private readonly log: Logger;
  private readonly listeners = new Listeners<AgentEvent>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly leakBackoff = new Backoff({ baseMs: 1000, maxMs: 30_000 });
  private leakRestart: NodeJS.Timeout | undefined;
  private leakStartedAt = 0;
  private decisions: PodDecisions;
  private outputs: ControlOutputs | undefined;
  private readonly tickWindow: TickWindow;
  /** how late the main thread's actuator passes ran */
  private readonly passLateness = new PassLateness(ACTUATOR_PASS_MS);
  private running = false;
  private stopping = false;
  private readonly spDefault: number[];
  private readonly loopSp: number[];
  private readonly latches: LatchStore;
  private readonly problems: ProblemRegistry;
  private readonly budgetStore: JsonStateFile<{ podKw: number | null }> | null;
  private readonly operatorStore: OperatorStore;
  /** the operator's decisions in force, as last saved */
  private operator: OperatorState = EMPTY_OPERATOR_STATE;
  /** operator changes, one after another: each is computed from the last, saved, then applied */
  private operatorChain: Promise<void> = Promise.resolve();
  private budgetOverrideKw: number | null = null;
  private limits_: CommandLimits;
  /** the flight recorder (null: off, or no state directory to write to) */
  private recorder: FlightRecorder | null = null;
  private readonly gainsStore: GainsStore;
  /** each watched rack's control-valve health, by its position feedback point */
  private readonly valves = new Map<string, { rack: number; health: ValveHealth; reported: string }>();
  /** relay autotunes and applied gains (set at start) */
  private tunings: LoopTunings | null = null;
  /** partial-stroke tests of the isolation valves (set at start) */
  private strokes: IsolationStrokes | null = null;

  constructor(
    loaded: LoadedConfig,
    readonly logs: Logs,
    /** from the agent this one replaces at a reload */
    private readonly carried?: CarriedState,
  ) {
    this.config = loaded.config;
    this.configHash = loaded.hash;
    const c = this.config;
    this.identity = { site: c.site, pod: c.pod, configHash: loaded.hash, racks: c.racks.map((r) => ({ name: r.name, ratedKw: r.ratedKw })), stateDir: stateDirOf(c) };
    this.log = logs.module("agent");
    this.problems = new ProblemRegistry(this.log);
    this.layout = podLayout(c);
    this.wiring = new PodWiring(c, this.layout, { writeCaps: c.supervisor.powerBudget.writeCaps });
    this.leaseFail = leaseFailWrites(c);
    const leakPath = new Set(Object.values(this.wiring.leakPath()).flat());
    const leakSplit = c.control.isolation.leakThread ? splitModbus(c.modbus, leakPath) : null;
    // left to the main thread: the leak path on serial buses, and the racks' power on BMCs
    const onModbus = new Set(c.modbus.devices.flatMap((d) => [...d.points, ...d.outputs].map((x) => `${d.name}.${x.name}`)));
    this.leakLeft = leakSplit === null ? [] : [...leakSplit.left, ...[...leakPath].filter((id) => !onModbus.has(id))];
    this.driver = new ModbusDriver(leakSplit?.kept ?? c.modbus, { points: this.points });
    this.leakThread =
      leakSplit === null || leakSplit.taken.devices.length === 0
        ? null
        : new LeakThread({
            modbus: leakSplit.taken,
            leases: leakSplit.leases,
            pod: { racks: c.racks, cdu: c.cdu },
            decisions: this.wiring.initialDecisions(),
            writeCaps: c.supervisor.powerBudget.writeCaps,
            reportMs: LEAK_REPORT_MS,
            passMs: ACTUATOR_PASS_MS,
            // one below the control thread: a tick (tens of µs) may preempt a poll's handling,
            // never the other way round
            fifoPriority: c.control.schedFifo ? Math.max(1, c.control.schedPriority - 1) : null,
            onPoint: (p) => this.points.publish(p),
            onLog: (level, message) => logs.module("leak-thread")[level](message),
            onDied: (why) => this.leakThreadDied(why),
          });
    this.ingest =
      c.mqttIngest === undefined
        ? null
        : new MqttIngest(
            { ...c.mqttIngest, clientId: c.mqttIngest.clientId ?? `podwarden-${c.site}-${c.pod}-ingest` },
            (silentMs) => logs.module("ingest").warn({ silentMs: Math.round(silentMs), keepaliveS: c.mqttIngest?.keepaliveS }, "sensor broker silent: giving up the connection"),
            this.points,
            (message) => logs.module("ingest").warn({ err: message }, "sensor broker sent a packet that breaks the protocol: connection ended"),
          );
    this.redfish =
      c.redfishClient.devices.length === 0 ? null : new RedfishDriver(c.redfishClient, { points: this.points, onLog: (level, message) => logs.module("redfish-client")[level](message) });
    this.supervisor = new Supervisor(c.supervisor, c, this.layout, (e) => this.emit(e), monoMs);
    this.tickWindow = new TickWindow(c.supervisor.overrun.windowMs);
    this.decisions = this.wiring.initialDecisions();
    this.spDefault = defaultSetpoints(c.control, this.layout);
    this.loopSp = [...this.spDefault];
    this.limits_ = commandLimits(c);
    this.latches = new LatchStore(this.stateDir);
    this.budgetStore = this.stateDir === undefined ? null : new JsonStateFile(join(this.stateDir, "power-budget.json"), checkBudgetFile);
    this.operatorStore = new OperatorStore(this.stateDir);
    this.gainsStore = new GainsStore(this.stateDir);
    if (c.valveHealth.enabled) {
      c.racks.forEach((r, i) => {
        if (r.points.valvePositionPct !== undefined) this.valves.set(r.points.valvePositionPct, { rack: i, health: new ValveHealth(c.valveHealth), reported: "" });
      });
    }
  }

  get limits(): CommandLimits {
    return this.limits_;
  }

  /** Every field point the agent reads: Modbus and MQTT ingest alike. */
  fieldPoints(): Point[] {
    return [...this.points.all()];
  }

  onEvent(l: (e: AgentEvent) => void): () => void {
    return this.listeners.add(l);
  }

  private emit(e: AgentEvent): void {
    // listeners (the uplink) first: the event is on the wire before the log line is formatted
    this.listeners.emit(e);
    const trip = this.recorder === null ? null : tripOf(e);
    if (trip !== null) this.recordTrip(trip);
    const level = e.type === "alarm.raised" && e.alarm.severity === "Critical" ? "warn" : "info";
    this.log[level]({ event: e }, e.type);
  }

  mode(): PodMode {
    return this.supervisor.mode;
  }

  activeAlarms(): Alarm[] {
    return this.supervisor.alarms.active();
  }

  powerBudgetKw(): number {
    return this.supervisor.powerBudgetKw;
  }

  /** Open while the control loop is healthy: the drivers refresh device leases only then. */
  healthy(): boolean {
    return this.running && !this.stopping && this.control.healthy(this.controlMaxAgeMs()) && this.supervisor.mode !== "Failsafe";
  }

  private controlMaxAgeMs(): number {
    return Math.max(50, 20 * this.config.control.periodMs);
  }

  async start(): Promise<void> {
    const c = this.config;
    const recording = c.recorder.enabled && this.stateDir !== undefined;
    // the gains an engineer applied before the restart: the worker loads its bank with them
    const gains = this.startTunings().restore();
    this.control = new ControlThread(podBankSpec(c.control, this.layout, c.racks, gains), {
      periodMs: c.control.periodMs,
      schedFifo: c.control.schedFifo,
      schedPriority: c.control.schedPriority,
      warmupTicks: c.control.warmupTicks,
      recorder: recording ? ringFor(c.recorder, c.control.periodMs) : undefined,
      onLog: (level, message) => this.logs.module("control")[level](message),
    });
    // Racks latched before a restart are isolated again before the first tick.
    if (this.latches.file === null) this.log.warn("no state directory: leak latches and operator decisions will not survive a restart (set stateDir or run under systemd with StateDirectory)");
    const restored = this.latches.load();
    if (restored.problem !== undefined) this.reportProblem("state:latches", { severity: "Critical", source: "agent", message: `leak latch state: ${restored.problem}`, untilAcknowledged: true });
    // a budget mission control set before the restart still holds: a pod must not come back
    // drawing more than it was last allowed
    const budget = this.budgetStore?.load();
    if (budget?.problem !== undefined) this.reportProblem("state:power-budget", { severity: "Warning", source: "agent", message: `power budget state: ${budget.problem}`, untilAcknowledged: true });
    const budgetKw = this.carried?.powerBudgetKw ?? budget?.value?.podKw;
    if (budgetKw !== undefined) {
      this.budgetOverrideKw = budgetKw;
      this.supervisor.setPowerBudget(budgetKw);
    }
    const operator = this.operatorStore.load();
    if (operator.problem !== undefined) this.reportProblem("state:operator", { severity: "Critical", source: "agent", message: `operator state: ${operator.problem}`, untilAcknowledged: true });
    this.restoreOperator(this.carried?.operator ?? operator.state);
    for (const name of this.carried?.latchedRacks ?? restored.racks) {
      const r = this.layout.rackIndex(name);
      if (r !== undefined) {
        this.control.restoreLatch(r);
        this.log.warn({ rack: name }, "leak latch restored from before the restart: rack isolated until an authorised reset");
      }
    }
    await this.control.start();
    if (this.control.schedFifo === "on") this.logs.module("control").info("control thread running SCHED_FIFO");
    this.startRecorder();
    this.running = true;
    // Until inputs arrive every loop is in fail-safe: the first writes put every actuator in its
    // declared safe state before any valid data exists.
    this.driver.setHealthGate(() => this.healthy());
    this.points.subscribe((p) => this.onPoint(p));
    if (this.leakThread !== null) {
      this.leakStartedAt = monoMs();
      await this.leakThread.start(this.control.frames);
      this.log.info({ left: this.leakLeft, schedFifo: this.leakThread.sched }, "leak inputs, isolation valves and rack power outputs of TCP devices served by the leak thread");
    }
    if (this.leakLeft.length > 0) this.log.warn({ ids: this.leakLeft }, "leak inputs, isolation valves and rack power outputs on serial buses or BMCs are served by the main thread: its work can delay their isolation (docs/safety.md)");
    this.driver.start();
    this.ingest?.start();
    this.redfish?.start();
    this.writeActuators();
    this.startStrokes();
    this.timers.push(setInterval(() => this.supervise(), c.supervisor.periodMs));
    this.timers.push(
      setInterval(() => {
        this.passLateness.mark(monoMs());
        this.writeActuators();
      }, ACTUATOR_PASS_MS),
    );
    void this.interlockWatch();
    this.emit({ type: "agent.started" });
  }

  /**
   * The leak thread ended unasked: Critical alarm while it is down, and a restart with backoff.
   * While it is down its leak inputs go stale, so the hot path treats them as a faulty sensor
   * (`isolation.leakSensorFault`); the main thread cannot take them over without a new driver.
   */
  private leakThreadDied(why: string): void {
    this.reportProblem("leak-thread", {
      severity: "Critical",
      source: "agent",
      message: `the leak thread stopped (${why}): leak inputs of TCP devices go stale and their racks fail as isolation.leakSensorFault says until it is restarted`,
    });
    if (!this.running || this.stopping) return;
    // a thread that ran a good while died of something rare: restart it promptly; one that dies
    // at once each time backs off, to 30 s, rather than spinning
    if (monoMs() - this.leakStartedAt > 60_000) this.leakBackoff.reset();
    clearTimeout(this.leakRestart);
    this.leakRestart = setTimeout(() => void this.restartLeakThread(), this.leakBackoff.next());
  }

  private async restartLeakThread(): Promise<void> {
    if (!this.running || this.stopping || this.leakThread === null || this.leakThread.running) return;
    this.leakStartedAt = monoMs();
    try {
      await this.leakThread.start(this.control.frames);
      this.log.warn("leak thread restarted");
      this.resolveProblem("leak-thread");
    } catch {
      // its exit has already reported the death and scheduled the next attempt
    }
  }

  private onPoint(p: Point): void {
    // the leak thread wrote its own points into the frames when it read them: what it reports
    // here is for status and telemetry only
    if (this.leakThread?.ownsPoint(p.id) === true) return;
    const valve = this.valves.get(p.id);
    // the valve's position against the command in force (the loop's output at the last pass)
    if (valve !== undefined && p.quality === "good") valve.health.sample(p.sourceTimeMs, this.outputs?.loopOut[this.layout.rackLoops[valve.rack]] ?? NaN, p.value);
    // a leak input that changed is decided now, not at the next tick: the isolation valves'
    // close commands leave up to a period sooner
    if (this.wiring.routeSample(p, this.control, monoMs())) this.control.tickNow();
  }

  /** Wakes on every interlock change the worker signals and writes the actuators at once. */
  private async interlockWatch(): Promise<void> {
    while (this.running && !this.stopping) {
      await this.control.outputsChanged(1000);
      if (this.running && !this.stopping) {
        // a partial-stroke test is released on a leak before anything else is written
        this.strokes?.step();
        this.writeActuators();
      }
    }
  }

  /** Sends the actuator commands for `o` (by default, the control thread's outputs read now). */
  private writeActuators(o: ControlOutputs | undefined = this.control.outputs()): void {
    if (!this.running) return;
    if (o === undefined) return;
    this.outputs = o;
    if (this.stopping) return;
    this.leakThread?.setDecisions(this.decisions);
    this.wiring.writeActuators(o, this.decisions, this.actuators, this.leaseFail);
  }

  /** The wiring's output sink: the Redfish driver for a BMC's Controls, the Modbus driver otherwise, with a failed write logged rather than thrown. */
  private readonly actuators: OutputSink = {
    setOutput: (id, v) => {
      if (this.leakThread?.ownsOutput(id) === true) return; // the leak thread writes it
      try {
        this.sendOutput(id, v);
      } catch (err) {
        this.log.error({ err }, `cannot write ${id}`);
      }
    },
  };

  private sendOutput(id: string, v: number): void {
    if (this.redfish?.ownsOutput(id) === true) this.redfish.setOutput(id, v);
    else this.driver.setOutput(id, v);
  }

  private reading(bankIndex: number, pointId: string, o: ControlOutputs | undefined): Reading {
    const p = this.points.get(pointId);
    const good = o !== undefined && o.pointQuality[bankIndex] === 0 && p !== undefined;
    if (good) return { value: p.value, good };
    // the hot path's verdict, then what the driver saw (its quality and, say, a failure current)
    const words = [o === undefined ? "no control output yet" : qualityWords(o.pointQuality[bankIndex])];
    if (p === undefined) words.push("never reported by its driver");
    else if (p.quality !== "good") words.push(`${p.quality}${p.detail === undefined ? "" : ` (${p.detail})`}`);
    return { value: p?.value ?? NaN, good, why: `${pointId}: ${words.filter((w) => w !== "").join(", ")}` };
  }

  private supervise(): void {
    if (!this.running || this.stopping) return;
    const c = this.config;
    const now = monoMs();
    for (const l of this.leases.expire(now)) {
      // gone from the state in force too; a restart would drop it anyway (its expiry has passed)
      const name = this.layout.loopName(l.loop);
      this.operator = { ...this.operator, setpoints: this.operator.setpoints.filter((p) => p.loop !== name) };
      this.loopSp[l.loop] = this.spDefault[l.loop];
      this.control.setSetpoint(l.loop, this.spDefault[l.loop]);
      this.emit({ type: "setpoint.expired", loop: this.layout.loopName(l.loop), value: this.spDefault[l.loop] });
    }
    for (const l of this.overrides.expire(now)) {
      const name = this.layout.loopName(l.loop);
      this.operator = { ...this.operator, overrides: this.operator.overrides.filter((o) => o.loop !== name) };
      const under = this.persistentMode(name);
      this.control.setMode(l.loop, under.mode, under.outputPct);
      this.emit({ type: "override.expired", loop: name, mode: under.mode, ...(under.outputPct === undefined ? {} : { outputPct: under.outputPct }) });
    }
    const fresh = this.control.outputs();
    const o = fresh ?? this.outputs;
    if (o !== undefined) {
      // A new latch means a new isolation: its close commands leave first. Only changed outputs
      // are sent, so this is cheap when nothing did.
      this.writeActuators(fresh);
      this.saveLatches(o);
    }
    this.problems.updateAlarms(this.supervisor.alarms);
    if (this.supervisor.mode === "Failsafe") this.tunings?.tuner.abortAll("the pod went to fail-safe");
    for (const v of this.valves.values()) {
      const name = this.config.racks[v.rack].name;
      const problems = v.health.problems();
      // the alarm's words change only when what is wrong does (a figure that wavers between
      // 4.0 and 5.0 % must not re-raise it every pass); the figures live in status and metrics
      const kinds = problems.map((p) => p.kind).join();
      if (kinds === v.reported) continue;
      v.reported = kinds;
      if (problems.length === 0) this.resolveProblem(`valve:${name}`);
      else this.reportProblem(`valve:${name}`, { severity: "Warning", source: name, message: `${name} control valve: ${problems.map((p) => p.text).join("; ")}` });
    }
    const overruns = this.control.overruns;
    const stats = this.modbusStats();
    const lay = this.layout;
    this.decisions = this.supervisor.evaluate({
      nowMs: now,
      controlHealthy: this.control.healthy(this.controlMaxAgeMs()),
      recentTicks: this.tickWindow.update(now, { ticks: this.control.ticks, overruns, lateness: this.control.latenessHistogram() }),
      loopStatus: o?.loopStatus ?? [],
      loopOut: o?.loopOut ?? [],
      rackState: o?.rackState ?? [],
      rackStatus: o?.rackStatus ?? [],
      racks: c.racks.map((r, i) => ({
        returnTempC: this.reading(lay.racks[i].returnTempC, r.points.returnTempC, o),
        supplyTempC: this.reading(lay.racks[i].supplyTempC, r.points.supplyTempC, o),
        flowLpm: this.reading(lay.racks[i].flowLpm, r.points.flowLpm, o),
        powerKw: this.reading(lay.racks[i].powerKw, r.points.powerKw, o),
        manualIsolate: this.control.frames.rackManualIsolate[i] === 1,
        noCoolant: o !== undefined && PodWiring.noCoolant(o, i),
      })),
      cduSupplyTempC: c.cdu.points.supplyTempC === undefined ? { value: NaN, good: false, why: "no CDU supply sensor configured" } : this.reading(lay.cdu.supplyTempC, c.cdu.points.supplyTempC, o),
      cduDpKpa: this.reading(lay.cdu.dpKpa, c.cdu.points.dpKpa, o),
      devices: [
        ...stats.devices.map((d) => ({
          name: d.name,
          ok: d.connected && d.breaker === "closed",
          why: !d.connected ? "disconnected" : `not answering (circuit breaker ${d.breaker})`,
        })),
        ...(this.redfish?.stats() ?? []).map((d) => ({ name: d.name, ok: d.connected && d.breaker === "closed", why: `${d.breaker === "closed" ? "" : `(circuit breaker ${d.breaker}) `}${d.why}` })),
      ],
    });
    this.alarmUnverified(now);
  }

  /**
   * A Control written over Redfish that the BMC has not confirmed on read-back (refused, a
   * mismatch, no answer) is an alarm while it lasts: a cap the pod counts on must never be
   * silently absent. The grace covers one write and its read-back.
   */
  private alarmUnverified(now: number): void {
    if (this.redfish === null) return;
    const late = new Map(this.redfish.unverified(now, UNVERIFIED_GRACE_MS).map((u) => [u.id, u]));
    for (const d of this.config.redfishClient.devices) {
      for (const o of d.outputs) {
        const id = `${d.name}.${o.name}`;
        const u = late.get(id);
        if (u === undefined) this.resolveProblem(`output:${id}`);
        else this.reportProblem(`output:${id}`, { severity: "Warning", source: u.device, message: `${id} is not verified on the BMC: ${u.why}` });
      }
    }
  }

  reportProblem(id: string, p: ProblemReport): void {
    this.problems.reportProblem(id, p);
  }

  resolveProblem(id: string): void {
    this.problems.resolveProblem(id);
  }

  /**
   * Writes the racks latched in `o` to the latch file if the set changed: written and synced off
   * the event loop (a write and rename can wait on the journal for tens of ms). A failed write is
   * alarmed and retried on the next call.
   */
  private saveLatches(o: ControlOutputs): void {
    this.latches.save(this.config.racks.filter((_, r) => o.rackState[r] !== L.RACK_NORMAL).map((r) => r.name))?.then(
      () => this.resolveProblem("state:latches-write"),
      (err: Error) => this.reportProblem("state:latches-write", { severity: "Critical", source: "agent", message: `cannot save leak latches: ${err.message}` }),
    );
  }

  /** Acknowledges an alarm; a one-off problem's alarm is thereby resolved. */
  acknowledgeAlarm(id: string, by: string): boolean {
    const known = this.supervisor.alarms.acknowledge(id, by);
    if (known) this.problems.acknowledged(id);
    return known;
  }

  /** Sets mission control's pod power budget (null withdraws it); kept across restarts. Rejects if it cannot be saved. */
  async setPowerBudget(kw: number | null): Promise<void> {
    // on disk first (written and synced off the event loop), so an accepted budget survives a restart
    await this.budgetStore?.saveInBackground({ podKw: kw });
    this.budgetOverrideKw = kw;
    this.supervisor.setPowerBudget(kw);
  }

  /** The state a structural reload hands to the agent that replaces this one. */
  carryOver(): CarriedState {
    const o = this.control.outputs() ?? this.outputs;
    return {
      latchedRacks: o === undefined ? [...(this.carried?.latchedRacks ?? [])] : this.config.racks.filter((_, r) => o.rackState[r] !== L.RACK_NORMAL).map((r) => r.name),
      operator: this.operator,
      powerBudgetKw: this.budgetOverrideKw,
    };
  }

  /**
   * Applies one operator decision: `change` computes the new operator state from the one in
   * force, which is saved (fsync, off the event loop) before `apply` runs. A decision that cannot
   * be saved is refused, with an alarm, and changes nothing: a restart would otherwise undo it
   * behind the operator's back (an isolation lifted into an open hose).
   */
  private decide(change: (s: OperatorState) => OperatorState, apply: () => void): Promise<void> {
    const run = async (): Promise<void> => {
      const next = change(this.operator);
      try {
        await this.operatorStore.save(next);
      } catch (err) {
        const why = (err as Error).message;
        this.reportProblem("state:operator-write", { severity: "Warning", source: "agent", message: `an operator decision was refused: it could not be saved (${why})`, untilAcknowledged: true });
        throw new Error(`the decision cannot be saved, so it is refused and nothing changed: ${why}`, { cause: err });
      }
      this.operator = next;
      apply();
    };
    const done = this.operatorChain.then(run, run);
    this.operatorChain = done.catch(() => undefined);
    return done;
  }

  /**
   * Puts back the operator decisions from before a restart or reload, before the first tick.
   * One that no longer fits the config (a rack or loop gone, a value outside the envelope, a
   * lease run out) is dropped and said: an alarm for what was lost, never a silent change.
   */
  private restoreOperator(s: OperatorState): void {
    const lay = this.layout;
    const lim = this.limits_;
    const dropped: string[] = [];
    const kept: OperatorState = { isolatedRacks: [], loopModes: [], maintenance: s.maintenance, setpoints: [], overrides: [] };
    for (const name of s.isolatedRacks) {
      const r = lay.rackIndex(name);
      if (r === undefined) dropped.push(`isolation of ${name}: no such rack now`);
      else {
        this.control.setManualIsolate(r, true);
        kept.isolatedRacks.push(name);
      }
    }
    for (const m of s.loopModes) {
      const loop = lay.loopIndex(m.loop);
      const env = loop !== undefined && lay.isPumpLoop(loop) ? lim.pumpOutputPct : lim.rackOutputPct;
      if (loop === undefined) dropped.push(`${m.mode} on ${m.loop}: no such loop now`);
      else if (m.mode === "Override") dropped.push(`Override on ${m.loop}: an Override holds only for a lease, and this one has none`);
      else if (m.outputPct !== undefined && (m.outputPct < env.min || m.outputPct > env.max)) dropped.push(`${m.mode} on ${m.loop}: ${m.outputPct} % is outside [${env.min}, ${env.max}] now`);
      else {
        this.control.setMode(loop, m.mode, m.outputPct);
        kept.loopModes.push(m);
      }
    }
    kept.setpoints = this.restoreLeased(s.setpoints, (pump) => (pump ? lim.dpKpa : lim.returnTempC), (p) => p.value, dropped, {
      noLoop: (p) => `setpoint on ${p.loop}: no such loop now`,
      outside: (p, env) => `setpoint ${p.value} on ${p.loop}: outside [${env.min}, ${env.max}] now`,
      apply: (loop, p, leftMs) => {
        this.leases.set(loop, p.value, leftMs, monoMs(), p.by);
        this.loopSp[loop] = p.value;
        this.control.setSetpoint(loop, p.value);
      },
    });
    kept.overrides = this.restoreLeased(s.overrides, (pump) => (pump ? lim.pumpOutputPct : lim.rackOutputPct), (o) => o.outputPct, dropped, {
      noLoop: (o) => `Override on ${o.loop}: no such loop now`,
      outside: (o, env) => `Override on ${o.loop}: ${o.outputPct} % is outside [${env.min}, ${env.max}] now`,
      apply: (loop, o, leftMs) => {
        this.overrides.set(loop, o.outputPct, leftMs, monoMs(), o.by);
        this.control.setMode(loop, "Override", o.outputPct);
      },
    });
    this.supervisor.setMaintenance(kept.maintenance);
    this.operator = kept;
    for (const line of describeOperatorState(kept)) this.log.warn({ decision: line }, "operator decision restored from before the restart");
    if (dropped.length > 0) {
      this.reportProblem("state:operator-dropped", { severity: "Warning", source: "agent", message: `operator decisions that no longer fit the config were dropped: ${dropped.join("; ")}`, untilAcknowledged: true });
    }
  }

  /**
   * Restores leased values (setpoints, Overrides): each for a loop that still exists, inside the
   * envelope it has now, with lease time left by the wall clock, and never more than the longest
   * lease (a clock stepped back must not stretch one). Returns those kept; says what was dropped.
   */
  private restoreLeased<T extends { loop: string; expiresAtMs: number }>(
    items: readonly T[],
    rangeOf: (pump: boolean) => Range,
    valueOf: (x: T) => number,
    dropped: string[],
    on: { noLoop: (x: T) => string; outside: (x: T, env: Range) => string; apply: (loop: number, x: T, leftMs: number) => void },
  ): T[] {
    const lay = this.layout;
    const nowWall = Date.now();
    const kept: T[] = [];
    for (const x of items) {
      const loop = lay.loopIndex(x.loop);
      if (loop === undefined) {
        dropped.push(on.noLoop(x));
        continue;
      }
      const env = rangeOf(lay.isPumpLoop(loop));
      const leftMs = Math.min(x.expiresAtMs - nowWall, this.limits_.maxLeaseS * 1000);
      if (valueOf(x) < env.min || valueOf(x) > env.max) dropped.push(on.outside(x, env));
      else if (leftMs > 0) {
        on.apply(loop, x, leftMs);
        kept.push(x);
      }
    }
    return kept;
  }

  snapshot(): Record<string, unknown> {
    return {
      status: this.status(),
      alarms: this.supervisor.alarms.active(),
      setpointLeases: this.leases.all().map((l) => ({ loop: this.layout.loopName(l.loop), value: l.value, expiresInMs: Math.max(0, Math.round(l.expiresAtMs - monoMs())), by: l.by })),
      overrides: this.overrides.all().map((l) => ({ loop: this.layout.loopName(l.loop), outputPct: l.value, expiresInMs: Math.max(0, Math.round(l.expiresAtMs - monoMs())), by: l.by })),
      powerBudgetKw: this.supervisor.powerBudgetKw,
      configHash: this.configHash,
    };
  }

  /** Sets a loop's setpoint for leaseMs (inside the configured envelope: the caller checks); saved before it applies. */
  setSetpoint(loop: number, value: number, leaseMs: number, by: string): Promise<void> {
    const name = this.layout.loopName(loop);
    const expiresAtMs = Date.now() + leaseMs;
    return this.decide(
      (s) => ({ ...s, setpoints: [...s.setpoints.filter((p) => p.loop !== name), { loop: name, value, expiresAtMs, by }] }),
      () => {
        this.leases.set(loop, value, leaseMs, monoMs(), by);
        this.loopSp[loop] = value;
        this.control.setSetpoint(loop, value);
      },
    );
  }

  /**
   * Sets a loop's persistent mode (and the output Manual holds): it stands until changed, and a
   * restart restores it. Any Override on the loop ends with it. Saved before it applies.
   */
  setLoopMode(loop: number, mode: Exclude<LoopMode, "Override">, value?: number): Promise<void> {
    const name = this.layout.loopName(loop);
    const entry = { loop: name, mode, ...(value === undefined ? {} : { outputPct: value }) };
    return this.decide(
      (s) => ({ ...s, loopModes: [...s.loopModes.filter((m) => m.loop !== name), ...(mode === "Automatic" ? [] : [entry])], overrides: s.overrides.filter((o) => o.loop !== name) }),
      () => {
        this.overrides.delete(loop);
        this.tunings?.abort(loop, `the loop's mode was set to ${mode}`);
        this.control.setMode(loop, mode, value);
      },
    );
  }

  /**
   * Overrides a loop's output for leaseMs: a remote value that holds only while its sender keeps
   * renewing it. When the lease runs out the loop goes back to its persistent mode (Automatic, or
   * the Manual an operator at the pod left). Saved before it applies.
   */
  overrideLoop(loop: number, outputPct: number, leaseMs: number, by: string): Promise<void> {
    const name = this.layout.loopName(loop);
    const expiresAtMs = Date.now() + leaseMs;
    return this.decide(
      (s) => ({ ...s, overrides: [...s.overrides.filter((o) => o.loop !== name), { loop: name, outputPct, expiresAtMs, by }] }),
      () => {
        this.overrides.set(loop, outputPct, leaseMs, monoMs(), by);
        this.tunings?.abort(loop, `the loop was put in Override by ${by}`);
        this.control.setMode(loop, "Override", outputPct);
      },
    );
  }

  /** The mode a loop returns to when its Override ends: what the operator state holds for it. */
  private persistentMode(name: string): { mode: LoopMode; outputPct?: number } {
    const m = this.operator.loopModes.find((x) => x.loop === name);
    return m === undefined ? { mode: "Automatic" } : m.outputPct === undefined ? { mode: m.mode } : { mode: m.mode, outputPct: m.outputPct };
  }

  /** An operator's isolation of a rack (or its end); saved before it applies. */
  isolateRack(rack: number, isolate: boolean): Promise<void> {
    const name = this.config.racks[rack].name;
    return this.decide(
      (s) => ({ ...s, isolatedRacks: [...s.isolatedRacks.filter((r) => r !== name), ...(isolate ? [name] : [])] }),
      () => this.control.setManualIsolate(rack, isolate),
    );
  }

  rackLoad(rack: number): RackLoad {
    const r = this.config.racks[rack];
    const p = this.reading(this.layout.racks[rack].powerKw, r.points.powerKw, this.control.outputs() ?? this.outputs);
    return {
      drawKw: p.good ? p.value : null,
      ...(p.good ? {} : { why: p.why ?? "no good reading" }),
      limitKw: noCoolantLimitKw(r) + this.config.supervisor.noCoolantPower.toleranceKw,
      isolatedByOperator: this.control.frames.rackManualIsolate[rack] === 1,
    };
  }

  leakLatched(rack: number): boolean {
    const o = this.control.outputs() ?? this.outputs;
    return o !== undefined && o.rackState[rack] !== L.RACK_NORMAL;
  }

  /** Requests a leak-latch reset; resolves with the hot path's verdict. */
  async resetLeak(rack: number): Promise<"accepted" | "refused-wet" | "timeout"> {
    this.control.requestReset(rack);
    const deadline = monoMs() + 1000;
    const ticks0 = this.control.ticks;
    while (monoMs() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
      if (this.control.ticks > ticks0 + 2) {
        const res = this.control.outputs()?.rackResetResult[rack];
        if (res === L.RESET_ACCEPTED) {
          this.supervisor.alarms.reset(`leak:${this.config.racks[rack].name}`);
          return "accepted";
        }
        if (res === L.RESET_REFUSED_WET) return "refused-wet";
      }
    }
    return "timeout";
  }

  /** Carries out a command through the executor, on this pod's own operations. */
  execute(body: CommandRequest, by: string): Promise<Outcome> {
    return executeCommand(this, body, by);
  }

  audit(a: AuditRecord): void {
    this.emit({ type: "command.audit", ...a });
  }

  /** Where state that must survive a restart lives, if anywhere. */
  get stateDir(): string | undefined {
    return stateDirOf(this.config);
  }

  /** Maintenance on or off; saved before it applies. */
  setMaintenance(on: boolean): Promise<void> {
    return this.decide(
      (s) => ({ ...s, maintenance: on }),
      () => this.supervisor.setMaintenance(on),
    );
  }

  status(): PodStatus {
    const outputs = this.outputs ?? this.control.outputs();
    const view = {
      outputs,
      decisions: this.decisions,
      power: (i: number) => (outputs === undefined ? { powerOff: this.decisions.rackPowerOff[i], capKw: this.decisions.powerCapsKw[i], writeCap: this.config.supervisor.powerBudget.writeCaps } : this.wiring.powerCommand(outputs, this.decisions, i)),
      value: (id: string): number | null => measuredValue(this.points.get(id)),
      setpoints: this.loopSp,
      manualIsolate: this.control.frames.rackManualIsolate,
      valveHealth: (rack: number): ValveHealthView | null => {
        const id = this.config.racks[rack].points.valvePositionPct;
        const h = id === undefined ? undefined : this.valves.get(id)?.health;
        if (h === undefined) return null;
        const f = h.figures();
        return { stickBandPct: f.stickBandPct, kind: f.kind, travelS: f.travelS, stuck: f.stuck, trackingErrorPct: f.trackingErrorPct, problems: h.problems().map((p) => p.text) };
      },
    };
    const ct = this.control;
    return {
      mode: this.supervisor.mode,
      maintenance: this.supervisor.maintenance,
      racks: rackStatuses(this.config, this.layout, view),
      pump: pumpStatus(this.config, this.layout, view),
      control: {
        ticks: ct.ticks,
        overruns: ct.overruns,
        p50Us: ct.latenessUs(0.5),
        p99Us: ct.latenessUs(0.99),
        p999Us: ct.latenessUs(0.999),
        maxUs: ct.maxLatenessUs,
        schedFifo: ct.schedFifo,
        recent: this.tickWindow.recent(),
        failsafeEntries: ct.failsafeEntries,
        actuatorPass: this.passLateness.figures(),
      },
    };
  }

  controlStats(): ReturnType<PodDiagnostics["controlStats"]> {
    const ct = this.control;
    return { ticks: ct.ticks, urgentTicks: ct.urgentTicks, overruns: ct.overruns, maxLatenessUs: ct.maxLatenessUs, lateness: ct.latenessHistogram(), recent: this.tickWindow.recent(), failsafeEntries: ct.failsafeEntries, actuatorPassLateness: this.passLateness.histogram };
  }

  modbusStats(): ReturnType<ModbusDriver["stats"]> {
    const main = this.driver.stats();
    if (this.leakThread === null) return main;
    const leak = this.leakThread.stats();
    return { devices: [...main.devices, ...leak.devices], buses: [...main.buses, ...leak.buses], polls: [...main.polls, ...leak.polls] };
  }

  ingestStats(): ReturnType<PodDiagnostics["ingestStats"]> {
    const i = this.ingest;
    return i === null ? null : { connected: i.connected, messages: i.messages, rejected: i.rejected, retainedIgnored: i.retainedIgnored, outOfOrder: i.outOfOrder, oversized: i.oversized, silentBrokerDrops: i.silentBrokerDrops, protocolErrorDrops: i.protocolErrorDrops };
  }

  redfishStats(): ReturnType<PodDiagnostics["redfishStats"]> {
    return this.redfish?.stats() ?? [];
  }

  /** New tuning in place (same structure): gains, limits, checks, thresholds, setpoint defaults. */
  applyTuning(next: AgentConfig): void {
    if (!sameStructure(this.config, next)) throw new Error("structure changed: a restart is needed");
    this.control.patch(podBankSpec(next.control, this.layout, next.racks, this.tunings?.byIndex()));
    this.leaseFail = leaseFailWrites(next);
    for (const v of this.valves.values()) v.health.reconfigure(next.valveHealth);
    this.supervisor.reconfigure(next.supervisor, next.control.isolation);
    Object.assign(this.config, { control: next.control, supervisor: next.supervisor, valveHealth: next.valveHealth, log: next.log });
    this.limits_ = commandLimits(this.config);
    defaultSetpoints(next.control, this.layout).forEach((sp, loop) => {
      this.spDefault[loop] = sp;
      if (this.leases.get(loop) === undefined) {
        this.loopSp[loop] = sp;
        this.control.setSetpoint(loop, sp);
      }
    });
  }

  /**
   * Stops the agent. With driveSafe, every control actuator is first written to its declared
   * sensor-fault safe value (isolation valves stay as they are: an isolated rack stays
   * isolated), and the heartbeat stops, so the devices' own leases take over from there.
   */
  async stop(opts: { driveSafe: boolean; reason: string; timeoutMs?: number }): Promise<void> {
    if (!this.running) return;
    this.emit({ type: "agent.stopping", reason: opts.reason });
    // released while the writes still go out: a valve held for a test opens again
    this.strokes?.end(`the agent is stopping (${opts.reason})`);
    this.stopping = true; // closes the health gate: no more lease heartbeats
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
    clearTimeout(this.leakRestart);
    this.tunings?.tuner.abortAll(`the agent is stopping (${opts.reason})`);
    if (opts.driveSafe) await this.driveSafe(opts.timeoutMs ?? 2000);
    this.running = false;
    // a leak latched since the last supervisor pass is saved too, and every latch on its way to
    // disk lands before the process may exit: otherwise the restart would return the rack to service
    const o = this.control.outputs() ?? this.outputs;
    if (o !== undefined) this.saveLatches(o);
    await this.latches.settled();
    await this.operatorChain; // an operator decision being saved lands (or is refused) first
    await this.tunings?.settled(); // and a gains change
    await this.strokes?.settled(); // and a partial-stroke verdict
    await this.recorder?.stop(); // a recording still open is written with what the ring holds
    await this.control.stop();
    await this.leakThread?.stop();
    await this.ingest?.stop();
    await this.redfish?.stop();
    await this.driver.stop();
  }

  private startRecorder(): void {
    const c = this.config;
    const ring = this.control.ring;
    const dir = this.stateDir;
    if (ring === null || dir === undefined) {
      if (c.recorder.enabled) this.log.warn("flight recorder off: no state directory to write recordings to");
      return;
    }
    const log = this.logs.module("recorder");
    try {
      this.recorder = new FlightRecorder(c.recorder, {
        dir: join(dir, "recordings"),
        ring,
        identity: {
          site: c.site,
          pod: c.pod,
          configHash: this.configHash,
          build: { version: packageVersion(), hotPath: this.control.hotPath },
          periodMs: c.control.periodMs,
          names: {
            points: bankPointIds(c),
            loops: Array.from({ length: this.layout.loops }, (_, i) => this.layout.loopName(i)),
            racks: c.racks.map((r) => r.name),
          },
        },
        spec: () => this.control.bankSpec,
        log: (level, message) => log[level](message),
        onProblem: (why) =>
          why === null ? this.resolveProblem("recorder") : this.reportProblem("recorder", { severity: "Warning", source: "agent", message: why }),
      });
    } catch (err) {
      this.reportProblem("recorder", { severity: "Warning", source: "agent", message: `flight recorder off: ${(err as Error).message}` });
    }
  }

  private recordTrip(reason: string): void {
    try {
      this.recorder?.trigger(reason);
    } catch (err) {
      this.log.warn({ reason }, `flight recorder: ${(err as Error).message}`);
    }
  }

  /** An operator's recording: the window around now. Throws when there is no recorder. */
  recordNow(by: string): string {
    if (this.recorder === null) throw new Error("the flight recorder is off (recorder.enabled, and a state directory)");
    const id = this.recorder.trigger(`operator:${by}`);
    this.audit({ action: "record", by, result: id });
    return id;
  }

  recentRecordings(n: number): RecordingSummary[] {
    return recentSummaries(this.recordings(), n);
  }

  private startTunings(): LoopTunings {
    const log = this.logs.module("tuning");
    this.tunings = new LoopTunings(
      {
        // the control thread is created after the tunings (its bank takes their gains)
        control: { startTune: (loop) => this.control.startTune(loop), stopTune: (loop) => this.control.stopTune(loop), tuneState: (loop) => this.control.tuneState(loop) },
        layout: this.layout,
        loopConfig: (loop) => (this.layout.isPumpLoop(loop) ? this.config.control.pumpLoop : this.config.control.rackLoop),
        outputs: () => this.control.outputs() ?? this.outputs,
        loopMode: (loop) => this.control.frames.loopMode[loop],
        podFailsafe: () => this.supervisor.mode === "Failsafe",
        patchGains: (gains: readonly (LoopGains | undefined)[]) => this.control.patch(podBankSpec(this.config.control, this.layout, this.config.racks, gains)),
        emit: (e) => this.emit(e),
        reportProblem: (id, p) => this.reportProblem(id, p),
        log: (level, fields, message) => log[level](fields, message),
      },
      this.gainsStore,
    );
    return this.tunings;
  }

  private startStrokes(): void {
    const c = this.config;
    const log = this.logs.module("stroke");
    this.strokes = new IsolationStrokes(
      {
        racks: c.racks.map((r, i) => ({
          name: r.name,
          loop: this.layout.rackLoops[i],
          supplyOpenLimit: r.points.supplyIsolationOpenLimit,
          supplyClosedLimit: r.points.supplyIsolationClosedLimit,
          returnOpenLimit: r.points.returnIsolationOpenLimit,
          returnClosedLimit: r.points.returnIsolationClosedLimit,
        })),
        outputs: () => this.control.outputs() ?? this.outputs,
        podFailsafe: () => this.supervisor.mode === "Failsafe",
        limit: (id) => {
          const p = this.points.get(id);
          return p === undefined || p.quality !== "good" || !Number.isFinite(p.value) ? null : { value: p.value, atMs: p.sourceTimeMs };
        },
        holdBounded: (rack, valve) => this.leakThread?.ownsOutput(valve === "supply" ? c.racks[rack].outputs.supplyIsolation : c.racks[rack].outputs.returnIsolation) === true,
        setStroke: (rack, bits, maxMs) => {
          this.wiring.setStroke(rack, bits);
          this.leakThread?.setStroke(rack, bits, maxMs);
          this.writeActuators();
        },
        emit: (e) => this.emit(e),
        reportProblem: (id, p) => this.reportProblem(id, p),
        resolveProblem: (id) => this.resolveProblem(id),
        log: (level, fields, message) => log[level](fields, message),
        monoMs,
        wallMs: () => Date.now(),
      },
      c.partialStroke,
      this.stateDir,
    );
    this.strokes.begin();
  }

  private get stroke(): IsolationStrokes {
    if (this.strokes === null) throw new Error("the agent has not started");
    return this.strokes;
  }

  startStroke(rack: number, valve: IsoValve, by: string): StrokeResult {
    return this.stroke.start(rack, valve, by);
  }

  abortStroke(by: string): StrokeResult | null {
    return this.stroke.abort(`aborted by ${by}`);
  }

  strokeStatus(): StrokeStatus {
    // metrics may be scraped before the start: no tests yet, rather than an error
    return this.strokes?.status() ?? { running: null, recent: null, last: [] };
  }

  private get tuning(): LoopTunings {
    if (this.tunings === null) throw new Error("the agent has not started");
    return this.tunings;
  }

  startTuning(loop: number, by: string): TuningStatus {
    return this.tuning.start(loop, by);
  }

  abortTuning(loop: number, by: string): TuningStatus | null {
    return this.tuning.abort(loop, `aborted by ${by}`);
  }

  tuningStatus(loop: number): TuningStatus | null {
    return this.tuning.tuner.status(loop);
  }

  applyGains(loop: number, gains: { rule: string } | LoopGains, by: string): Promise<AppliedGains> {
    return this.tuning.apply(loop, gains, by);
  }

  revertGains(loop: number, by: string): Promise<boolean> {
    return this.tuning.revert(loop, by);
  }

  loopGains(loop: number): LoopGainsStatus {
    return this.tuning.status(loop);
  }

  /** The recordings on disk, oldest first (none without a recorder). */
  recordings(): RecordingEntry[] {
    return this.recorder?.list() ?? [];
  }

  /** The recordings' directory (undefined without a recorder). */
  get recordingsDir(): string | undefined {
    return this.recorder?.dir;
  }

  /** Resolves when the recorder has written what it was asked to (tests, and a clean stop). */
  async recordingsFlushed(): Promise<void> {
    await this.recorder?.flushed();
  }

  /** What became of an output's last command: the leak thread's for the outputs it owns, the driver's otherwise. */
  outputState(id: string): OutputState | undefined {
    return this.leakThread?.outputState(id) ?? this.redfish?.outputState(id) ?? this.driver.outputState(id);
  }

  private async driveSafe(timeoutMs: number): Promise<void> {
    const c = this.config;
    const writes: string[] = [];
    for (const w of this.wiring.safeWrites(this.control.outputs() ?? this.outputs, c.control)) {
      try {
        this.sendOutput(w.id, w.value);
        writes.push(w.id);
      } catch (err) {
        this.log.error({ err }, `cannot write ${w.id} safe`);
      }
    }
    const t0 = monoMs();
    const done = (): boolean =>
      writes.every((id) => {
        const s = this.outputState(id);
        return s !== undefined && s.writtenAtMs !== null && s.writtenAtMs >= t0 && s.written === s.value;
      });
    while (!done() && monoMs() - t0 < timeoutMs) await new Promise((r) => setTimeout(r, 10));
    if (!done()) this.log.warn("not every actuator confirmed its safe value before shutdown; device leases will take over");
  }
}
