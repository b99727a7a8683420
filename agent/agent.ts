// The agent: wires config, drivers, the control worker and the supervisor into one pod
// controller, and owns its lifecycle (start safe, keep leases only while healthy, stop safe).
import * as L from "../hotpath-as/assembly/layout.js";
import type { LoopMode, SafeAction } from "../hotpath-as/bank-config.js";
import { ModbusDriver } from "../drivers/modbus/driver.js";
import { MqttIngest } from "../drivers/mqtt-ingest.js";
import type { Point } from "../drivers/points.js";
import { monoMs } from "../lib/clock.js";
import type { AgentConfig, LoadedConfig } from "./config/load.js";
import { ControlThread, type ControlOutputs } from "./control/control-thread.js";
import type { Logger, Logs } from "./log.js";
import { podBankSpec, podLayout, type PodControl, type PodLayout } from "./pod-bank.js";
import { LatchStore } from "./latch-store.js";
import { JsonStateFile } from "../lib/json-state-file.js";
import { join } from "node:path";
import { SetpointLeases } from "./supervisor/setpoints.js";
import { qualityWords, Supervisor, type PodMode, type Reading, type SupervisorDecisions, type SupervisorEvent } from "./supervisor/supervisor.js";

function checkBudgetFile(data: unknown): { podKw: number | null } {
  const kw = (data as { podKw?: unknown } | null)?.podKw;
  if (kw !== null && (typeof kw !== "number" || !Number.isFinite(kw) || kw < 0)) throw new Error("podKw is not a budget");
  return { podKw: kw };
}

export function podControlFromConfig(c: AgentConfig): PodControl {
  return {
    racks: c.racks.length,
    leakSensors: c.racks.map((r) => r.points.leak.length),
    returnTempSetpointC: c.control.returnTempSetpointC,
    dpSetpointKpa: c.control.dpSetpointKpa,
    rackLoop: c.control.rackLoop,
    pumpLoop: c.control.pumpLoop,
    points: c.control.points,
    isolation: c.control.isolation,
  };
}

/** The value a loop's actuator takes for a declared safe action, for a shutdown. */
function safeValue(a: SafeAction, outMin: number, outMax: number, current: number): number {
  if (a === "open") return outMax;
  if (a === "closed") return outMin;
  if (a === "hold") return Number.isFinite(current) ? current : outMax;
  return Math.min(Math.max(a.fixed, outMin), outMax);
}

/** Same devices, points, racks and wiring: a reload can patch tuning in place. */
export function sameStructure(a: AgentConfig, b: AgentConfig): boolean {
  const shape = (c: AgentConfig): string => JSON.stringify([c.site, c.pod, c.racks, c.cdu, c.modbus, c.mqttIngest ?? null, c.uplink ?? null, c.control.periodMs]);
  return shape(a) === shape(b);
}

/** The state directory a config gives: its own `stateDir`, else systemd's StateDirectory. */
export function stateDirOf(c: AgentConfig): string | undefined {
  return c.stateDir ?? process.env.STATE_DIRECTORY;
}

/**
 * What a reload may not change, because it is the daemon's identity: the pod it claims on this
 * host and in MQTT, and the directory its latches, spool and replay guard live in (moving that
 * live would leave a latched leak behind in the old one). Returns why, or null.
 */
export function identityChange(a: AgentConfig, b: AgentConfig): string | null {
  if (a.site !== b.site || a.pod !== b.pod) return `the pod changed (${a.site}/${a.pod} -> ${b.site}/${b.pod})`;
  if (stateDirOf(a) !== stateDirOf(b)) return `the state directory changed (${stateDirOf(a) ?? "none"} -> ${stateDirOf(b) ?? "none"})`;
  return null;
}

export type AgentEvent =
  | SupervisorEvent
  | { type: "setpoint.expired"; loop: string; value: number }
  | { type: "agent.started" }
  | { type: "agent.stopping"; reason: string }
  | { type: "command.audit"; action: string; rack?: string; by: string; result: string; transaction?: string; reason?: string; suppressed?: number };

/** A condition outside the control loops (state files, the uplink's spool) shown as an alarm. */
export interface ProblemReport {
  severity: "Warning" | "Critical";
  source: string;
  /** null when the problem has gone */
  message: string | null;
  /**
   * A one-off event (a state file quarantined, spooled events dropped), not a condition that
   * goes away by itself: it stays raised until an operator acknowledges it. Without this, a
   * problem stays raised until its owner reports it resolved (resolveProblem).
   */
  untilAcknowledged?: boolean;
}

export interface RackStatus {
  name: string;
  returnTempC: number;
  supplyTempC: number;
  flowLpm: number;
  powerKw: number;
  powerCapKw: number;
  valvePct: number;
  supplyIsolationOpen: boolean;
  returnIsolationOpen: boolean;
  isolation: "Normal" | "Isolating" | "Isolated" | "Escalated";
  leak: "OK" | "Warning" | "Critical";
  loopStatus: number;
  setpointC: number;
}

export interface PodStatus {
  mode: PodMode;
  racks: RackStatus[];
  pump: { speedCmdPct: number; dpKpa: number; enabled: boolean; loopStatus: number; setpointKpa: number };
  control: { ticks: number; overruns: number; p50Us: number; p99Us: number; p999Us: number; maxUs: number; schedFifo: string };
}

const ISOLATION = ["Normal", "Isolating", "Isolated", "Escalated"] as const;

export class Agent {
  readonly config: AgentConfig;
  readonly configHash: string;
  readonly layout: PodLayout;
  readonly driver: ModbusDriver;
  readonly ingest: MqttIngest | null;
  readonly supervisor: Supervisor;
  readonly leases = new SetpointLeases();
  control!: ControlThread;
  private readonly log: Logger;
  private readonly routes = new Map<string, number[]>();
  /** leak inputs, with the last value written: a change makes the control thread tick at once */
  private readonly leakPoints = new Map<string, number>();
  private readonly listeners: ((e: AgentEvent) => void)[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private decisions: SupervisorDecisions;
  private outputs: ControlOutputs | undefined;
  private lastOverruns = 0;
  private running = false;
  private stopping = false;
  private readonly spDefault: number[];
  private readonly loopSp: number[];
  private readonly latches: LatchStore;
  private readonly problems = new Map<string, ProblemReport>();
  private readonly budgetStore: JsonStateFile<{ podKw: number | null }> | null;

  constructor(
    loaded: LoadedConfig,
    readonly logs: Logs,
  ) {
    this.config = loaded.config;
    this.configHash = loaded.hash;
    const c = this.config;
    this.log = logs.module("agent");
    this.layout = podLayout(podControlFromConfig(c));
    const lay = this.layout;
    c.racks.forEach((r, i) => {
      const p = lay.racks[i];
      this.route(r.points.returnTempC, p.returnTempC);
      this.route(r.points.supplyTempC, p.supplyTempC);
      this.route(r.points.flowLpm, p.flowLpm);
      this.route(r.points.powerKw, p.powerKw);
      r.points.leak.forEach((id, k) => {
        this.route(id, p.leaks[k]);
        this.leakPoints.set(id, NaN);
      });
    });
    this.route(c.cdu.points.dpKpa, lay.cdu.dpKpa);
    this.route(c.cdu.points.supplyTempC, lay.cdu.supplyTempC);
    this.driver = new ModbusDriver(c.modbus);
    this.ingest =
      c.mqttIngest === undefined
        ? null
        : new MqttIngest({ ...c.mqttIngest, clientId: c.mqttIngest.clientId ?? `podwarden-${c.site}-${c.pod}-ingest` }, (silentMs) =>
            logs.module("ingest").warn({ silentMs: Math.round(silentMs), keepaliveS: c.mqttIngest?.keepaliveS }, "sensor broker silent: giving up the connection"),
          );
    this.supervisor = new Supervisor(c, (e) => this.emit(e), monoMs);
    this.decisions = { pumpEnable: true, rackPowerOff: c.racks.map(() => false), powerCapsKw: c.racks.map((r) => r.ratedKw) };
    this.spDefault = [...c.racks.map(() => c.control.returnTempSetpointC), c.control.dpSetpointKpa];
    this.loopSp = [...this.spDefault];
    this.latches = new LatchStore(this.stateDir);
    this.budgetStore = this.stateDir === undefined ? null : new JsonStateFile(join(this.stateDir, "power-budget.json"), checkBudgetFile);
  }

  private route(pointId: string, bankIndex: number): void {
    const list = this.routes.get(pointId) ?? [];
    list.push(bankIndex);
    this.routes.set(pointId, list);
  }

  /** Every field point the agent reads: Modbus, then MQTT ingest. */
  fieldPoints(): Point[] {
    return [...this.driver.points.all(), ...(this.ingest?.points.all() ?? [])];
  }

  /** Calls l with every event; returns a function that stops it. */
  onEvent(l: (e: AgentEvent) => void): () => void {
    this.listeners.push(l);
    return () => {
      const i = this.listeners.indexOf(l);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  private emit(e: AgentEvent): void {
    // listeners (the uplink) first: the event is on the wire before the log line is formatted
    for (const l of this.listeners) l(e);
    const level = e.type === "alarm.raised" && e.alarm.severity === "Critical" ? "warn" : "info";
    this.log[level]({ event: e }, e.type);
  }

  /** Open while the control loop is healthy: the drivers refresh device leases only then. */
  healthy(): boolean {
    const maxAge = Math.max(50, 20 * this.config.control.periodMs);
    return this.running && !this.stopping && this.control.healthy(maxAge) && this.supervisor.mode !== "Failsafe";
  }

  async start(): Promise<void> {
    const c = this.config;
    const spec = podBankSpec(podControlFromConfig(c), this.layout);
    this.control = new ControlThread(spec, {
      periodMs: c.control.periodMs,
      schedFifo: c.control.schedFifo,
      schedPriority: c.control.schedPriority,
      warmupTicks: c.control.warmupTicks,
      onLog: (level, message) => this.logs.module("control")[level](message),
    });
    // Racks latched before a restart are isolated again before the first tick.
    if (this.latches.file === null) this.log.warn("no state directory: leak latches will not survive a restart (set stateDir or run under systemd with StateDirectory)");
    const restored = this.latches.load();
    if (restored.problem !== undefined) this.reportProblem("state:latches", { severity: "Critical", source: "agent", message: `leak latch state: ${restored.problem}`, untilAcknowledged: true });
    // a budget mission control set before the restart still holds: a pod must not come back
    // drawing more than it was last allowed
    const budget = this.budgetStore?.load();
    if (budget?.problem !== undefined) this.reportProblem("state:power-budget", { severity: "Warning", source: "agent", message: `power budget state: ${budget.problem}`, untilAcknowledged: true });
    if (budget?.value !== undefined) this.supervisor.setPowerBudget(budget.value.podKw);
    for (const name of restored.racks) {
      const r = c.racks.findIndex((x) => x.name === name);
      if (r >= 0) {
        this.control.restoreLatch(r);
        this.log.warn({ rack: name }, "leak latch restored from before the restart: rack isolated until an authorised reset");
      }
    }
    await this.control.start();
    const ctlLog = this.logs.module("control");
    if (this.control.schedFifo === "on") ctlLog.info("control thread running SCHED_FIFO");
    this.running = true;
    // Until inputs arrive every loop is in fail-safe: the first writes put every actuator in its
    // declared safe state before any valid data exists.
    this.driver.setHealthGate(() => this.healthy());
    this.driver.points.subscribe((p) => this.onPoint(p));
    this.ingest?.points.subscribe((p) => this.onPoint(p));
    this.driver.start();
    this.ingest?.start();
    this.writeActuators();
    this.timers.push(setInterval(() => this.supervise(), c.supervisor.periodMs));
    this.timers.push(setInterval(() => this.writeActuators(), 50));
    void this.interlockWatch();
    this.emit({ type: "agent.started" });
  }

  private onPoint(p: Point): void {
    const idx = this.routes.get(p.id);
    if (idx === undefined) return;
    // good: the sample; invalid: NaN now (rejected by the hot path); a communication failure:
    // nothing, so the sample ages and the hot path's stale check fails the loop safe in time
    if (p.quality !== "good" && p.quality !== "invalid") return;
    const value = p.quality === "good" ? p.value : NaN;
    const sourceTimeMs = p.quality === "good" ? p.sourceTimeMs : monoMs();
    for (const i of idx) this.control.writeSample(i, value, sourceTimeMs);
    // a leak sensor that changed (wet, dry, cable fault, unreadable) is decided now, not at the
    // next tick: the isolation valves' close commands leave up to a period sooner
    const lastLeak = this.leakPoints.get(p.id);
    if (lastLeak !== undefined && !Object.is(lastLeak, value)) {
      this.leakPoints.set(p.id, value);
      this.control.tickNow();
    }
  }

  /** Wakes on every interlock change the worker signals and writes the actuators at once. */
  private async interlockWatch(): Promise<void> {
    while (this.running && !this.stopping) {
      await this.control.outputsChanged(1000);
      if (this.running && !this.stopping) this.writeActuators();
    }
  }

  private setOutput(id: string | undefined, v: number): void {
    if (id === undefined || !Number.isFinite(v)) return;
    try {
      this.driver.setOutput(id, v);
    } catch (err) {
      this.log.error({ err }, `cannot write ${id}`);
    }
  }

  /** Sends the actuator commands for `o` (by default, the control thread's outputs read now). */
  private writeActuators(o: ControlOutputs | undefined = this.control.outputs()): void {
    if (!this.running) return;
    if (o === undefined) return;
    this.outputs = o;
    if (this.stopping) return;
    const c = this.config;
    const lay = this.layout;
    const d = this.decisions;
    const set = (id: string | undefined, v: number): void => this.setOutput(id, v);
    // isolation valves first: on a leak they must not queue behind the rack's valve write
    c.racks.forEach((r, i) => {
      set(r.outputs.supplyIsolation, o.rackSupplyOpen[i]);
      set(r.outputs.returnIsolation, o.rackReturnOpen[i]);
    });
    c.racks.forEach((r, i) => {
      set(r.outputs.valve, Math.round(o.loopOut[lay.rackLoops[i]] * 10) / 10);
      set(r.outputs.powerOff, d.rackPowerOff[i] ? 1 : 0);
      if (c.supervisor.powerBudget.writeCaps) set(r.outputs.powerCap, Math.round(d.powerCapsKw[i] * 10) / 10);
    });
    set(c.cdu.outputs.pumpSpeed, Math.round(o.loopOut[lay.pumpLoop] * 10) / 10);
    set(c.cdu.outputs.pumpEnable, d.pumpEnable ? 1 : 0);
  }

  private reading(bankIndex: number, pointId: string, o: ControlOutputs | undefined): Reading {
    const p = this.driver.points.get(pointId) ?? this.ingest?.points.get(pointId);
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
      this.loopSp[l.loop] = this.spDefault[l.loop];
      this.control.setSetpoint(l.loop, this.spDefault[l.loop]);
      this.emit({ type: "setpoint.expired", loop: this.loopName(l.loop), value: this.spDefault[l.loop] });
    }
    const fresh = this.control.outputs();
    const o = fresh ?? this.outputs;
    if (o !== undefined) {
      // A new latch means a new isolation: its close commands leave first. Only changed outputs
      // are sent, so this is cheap when nothing did.
      this.writeActuators(fresh);
      this.saveLatches(o);
    }
    for (const [id, p] of this.problems) this.supervisor.alarms.update(id, p.message !== null, { severity: p.severity, source: p.source, message: p.message ?? "resolved" });
    const overruns = this.control.overruns;
    const stats = this.driver.stats();
    const lay = this.layout;
    this.decisions = this.supervisor.evaluate({
      nowMs: now,
      controlHealthy: this.control.healthy(Math.max(50, 20 * c.control.periodMs)),
      overrunsDelta: overruns - this.lastOverruns,
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
      })),
      cduSupplyTempC: this.reading(lay.cdu.supplyTempC, c.cdu.points.supplyTempC, o),
      cduDpKpa: this.reading(lay.cdu.dpKpa, c.cdu.points.dpKpa, o),
      devices: stats.devices.map((d) => ({
        name: d.name,
        ok: d.connected && d.breaker === "closed",
        why: !d.connected ? "disconnected" : `not answering (circuit breaker ${d.breaker})`,
      })),
    });
    this.lastOverruns = overruns;
  }

  loopName(loop: number): string {
    return loop < this.config.racks.length ? `${this.config.racks[loop].name}.valve` : "cdu.pump";
  }

  // ---- operations the uplink's commands map onto -----------------------------------------------

  rackIndex(name: string): number {
    const i = this.config.racks.findIndex((r) => r.name === name);
    if (i < 0) throw new Error(`no rack "${name}"`);
    return i;
  }

  /** The loop index for a loop name as alarms and events use it (`<rack>.valve`, `cdu.pump`). */
  loopIndex(name: string): number {
    for (let loop = 0; loop <= this.config.racks.length; loop++) if (this.loopName(loop) === name) return loop;
    throw new Error(`no loop "${name}"`);
  }

  /** Raises (message set) or clears (message null) an alarm for a condition outside the loops. */
  reportProblem(id: string, p: ProblemReport): void {
    // a failing write is reported on every attempt (a full disk: each telemetry period); log it
    // once per change of message, not every time
    if (p.message !== null && p.message !== this.problems.get(id)?.message) this.log.error({ alarm: id }, p.message);
    this.problems.set(id, p);
  }

  /** Clears a problem's condition (its alarm then clears after the dwell); a no-op if none is raised. */
  resolveProblem(id: string): void {
    const p = this.problems.get(id);
    if (p !== undefined && p.message !== null) this.problems.set(id, { ...p, message: null });
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
    if (known && this.problems.get(id)?.untilAcknowledged === true) this.resolveProblem(id);
    return known;
  }

  /** Sets mission control's pod power budget (null withdraws it); kept across restarts. Rejects if it cannot be saved. */
  async setPowerBudget(kw: number | null): Promise<void> {
    // on disk first (written and synced off the event loop), so an accepted budget survives a restart
    await this.budgetStore?.saveInBackground({ podKw: kw });
    this.supervisor.setPowerBudget(kw);
  }

  /** Everything mission control needs to rebuild its picture of the pod. */
  snapshot(): Record<string, unknown> {
    return {
      status: this.status(),
      alarms: this.supervisor.alarms.active(),
      setpointLeases: this.leases.all().map((l) => ({ loop: this.loopName(l.loop), value: l.value, expiresInMs: Math.max(0, Math.round(l.expiresAtMs - monoMs())), by: l.by })),
      powerBudgetKw: this.supervisor.powerBudgetKw,
      configHash: this.configHash,
    };
  }

  /** Sets a loop's setpoint for leaseMs (clamped to the configured envelope by the caller's validation). */
  setSetpoint(loop: number, value: number, leaseMs: number, by: string): void {
    this.leases.set(loop, value, leaseMs, monoMs(), by);
    this.loopSp[loop] = value;
    this.control.setSetpoint(loop, value);
  }

  setLoopMode(loop: number, mode: LoopMode, value?: number): void {
    this.control.setMode(loop, mode, value);
  }

  isolateRack(rack: number, isolate: boolean): void {
    this.control.setManualIsolate(rack, isolate);
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

  /** Records an operator action as an event (and so in the log and on the events topic). */
  audit(a: Omit<Extract<AgentEvent, { type: "command.audit" }>, "type">): void {
    this.emit({ type: "command.audit", ...a });
  }

  /** Where state that must survive a restart lives, if anywhere. */
  get stateDir(): string | undefined {
    return stateDirOf(this.config);
  }

  setMaintenance(on: boolean): void {
    this.supervisor.setMaintenance(on);
  }

  status(): PodStatus {
    const o = this.outputs ?? this.control.outputs();
    const c = this.config;
    const lay = this.layout;
    const val = (id: string): number => this.driver.points.get(id)?.value ?? this.ingest?.points.get(id)?.value ?? NaN;
    const ct = this.control;
    return {
      mode: this.supervisor.mode,
      racks: c.racks.map((r, i) => {
        const state = o?.rackState[i] ?? 0;
        const rs = o?.rackStatus[i] ?? 0;
        return {
          name: r.name,
          returnTempC: val(r.points.returnTempC),
          supplyTempC: val(r.points.supplyTempC),
          flowLpm: val(r.points.flowLpm),
          powerKw: val(r.points.powerKw),
          powerCapKw: this.decisions.powerCapsKw[i],
          valvePct: o?.loopOut[lay.rackLoops[i]] ?? NaN,
          supplyIsolationOpen: o?.rackSupplyOpen[i] === 1,
          returnIsolationOpen: o?.rackReturnOpen[i] === 1,
          isolation: ISOLATION[state] ?? "Normal",
          leak: state !== L.RACK_NORMAL || rs & L.RS_LEAK_WET ? "Critical" : rs & L.RS_LEAK_SENSOR_FAULT ? "Warning" : "OK",
          loopStatus: o?.loopStatus[lay.rackLoops[i]] ?? 0,
          setpointC: this.loopSp[i],
        };
      }),
      pump: {
        speedCmdPct: o?.loopOut[lay.pumpLoop] ?? NaN,
        dpKpa: val(c.cdu.points.dpKpa),
        enabled: this.decisions.pumpEnable,
        loopStatus: o?.loopStatus[lay.pumpLoop] ?? 0,
        setpointKpa: this.loopSp[lay.pumpLoop],
      },
      control: {
        ticks: ct.ticks,
        overruns: ct.overruns,
        p50Us: ct.latenessUs(0.5),
        p99Us: ct.latenessUs(0.99),
        p999Us: ct.latenessUs(0.999),
        maxUs: ct.maxLatenessUs,
        schedFifo: ct.schedFifo,
      },
    };
  }

  /** New tuning in place (same structure): gains, limits, checks, thresholds, setpoint defaults. */
  applyTuning(next: AgentConfig): void {
    if (!sameStructure(this.config, next)) throw new Error("structure changed: a restart is needed");
    this.control.patch(podBankSpec(podControlFromConfig(next), this.layout));
    this.supervisor.reconfigure(next);
    Object.assign(this.config, { control: next.control, supervisor: next.supervisor, log: next.log });
    const defaults = [...next.racks.map(() => next.control.returnTempSetpointC), next.control.dpSetpointKpa];
    defaults.forEach((sp, loop) => {
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
    this.stopping = true; // closes the health gate: no more lease heartbeats
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
    if (opts.driveSafe) await this.driveSafe(opts.timeoutMs ?? 2000);
    this.running = false;
    // a leak latched since the last supervisor pass is saved too, and every latch on its way to
    // disk lands before the process may exit: otherwise the restart would return the rack to service
    const o = this.control.outputs() ?? this.outputs;
    if (o !== undefined) this.saveLatches(o);
    await this.latches.settled();
    await this.control.stop();
    await this.ingest?.stop();
    await this.driver.stop();
  }

  private async driveSafe(timeoutMs: number): Promise<void> {
    const c = this.config;
    const o = this.control.outputs() ?? this.outputs;
    const rl = c.control.rackLoop;
    const pl = c.control.pumpLoop;
    const writes: string[] = [];
    const set = (id: string | undefined, v: number): void => {
      if (id === undefined) return;
      try {
        this.driver.setOutput(id, Math.round(v * 10) / 10);
        writes.push(id);
      } catch (err) {
        this.log.error({ err }, `cannot write ${id} safe`);
      }
    };
    c.racks.forEach((r, i) => set(r.outputs.valve, safeValue(rl.safeOnSensorFault, rl.outMin, rl.outMax, o?.loopOut[this.layout.rackLoops[i]] ?? NaN)));
    set(c.cdu.outputs.pumpSpeed, safeValue(pl.safeOnSensorFault, pl.outMin, pl.outMax, o?.loopOut[this.layout.pumpLoop] ?? NaN));
    const t0 = monoMs();
    const done = (): boolean =>
      writes.every((id) => {
        const s = this.driver.outputState(id);
        return s !== undefined && s.writtenAtMs !== null && s.writtenAtMs >= t0 && s.written === s.value;
      });
    while (!done() && monoMs() - t0 < timeoutMs) await new Promise((r) => setTimeout(r, 10));
    if (!done()) this.log.warn("not every actuator confirmed its safe value before shutdown; device leases will take over");
  }
}
