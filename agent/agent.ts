// The agent: builds the pod (its field drivers, the pod loop, the control worker, the supervisor
// and the features around them), starts and stops it in order, and takes a tuning reload in
// place. The pipeline is the pod loop's (loop/pod-loop.ts); each feature is a folder given the
// pod context (pod-context.ts), registered in `features` below. Services take the narrow faces
// of pod-api.ts, never this class.
import { PointStore, type Point } from "../lib/points.js";
import { monoMs } from "../lib/clock.js";
import { Listeners } from "../lib/listeners.js";
import { podBankSpec } from "../pod/bank.js";
import { podLayout, type PodLayout } from "../pod/layout.js";
import { PodWiring } from "../pod/wiring.js";
import { commandLimits, executeCommand } from "./commands/executor.js";
import type { AgentConfig, LoadedConfig } from "./config/load.js";
import { ControlThread } from "./control/control-thread.js";
import { StrokeFeature } from "./health/stroke-feature.js";
import { ValveWatch } from "./health/valve-watch.js";
import { sameStructure, stateDirOf, type CarriedState } from "./lifecycle.js";
import type { Logger, Logs } from "./log.js";
import { podField, type PodField } from "./loop/field-setup.js";
import { PodLoop } from "./loop/pod-loop.js";
import { OperatorDecisions } from "./operator/operator-decisions.js";
import type { AgentEvent, AuditRecord, CommandLimits, CommandRequest, Outcome, PodCommander, PodCommands, PodDiagnostics, PodIdentity, PodReader, PodStatus, ProblemReport, ProblemReporter, RecordingSummary } from "./pod-api.js";
import { podCommander } from "./pod-commander.js";
import type { PodContext, PodFeature } from "./pod-context.js";
import { ProblemRegistry } from "./problems.js";
import { RecorderFeature } from "./recorder/recorder-feature.js";
import { ReleaseFeature } from "./release/release-feature.js";
import type { Alarm } from "./supervisor/alarms.js";
import { Supervisor, type PodMode } from "./supervisor/supervisor.js";
import { TuningFeature } from "./tuning/tuning-feature.js";
export type { AgentEvent, PodStatus, ProblemReport } from "./pod-api.js";
export { identityChange, sameStructure, stateDirOf, type CarriedState } from "./lifecycle.js";

export class Agent implements PodReader, PodCommands, PodDiagnostics, ProblemReporter {
  readonly config: AgentConfig;
  readonly configHash: string;
  readonly identity: PodIdentity;
  readonly layout: PodLayout;
  /** every field point, from every driver */
  readonly points = new PointStore();
  readonly field: PodField;
  readonly supervisor: Supervisor;
  readonly loop: PodLoop;
  // the features, each in its folder, given the pod context
  readonly operator: OperatorDecisions;
  readonly tuning: TuningFeature;
  readonly valves: ValveWatch;
  readonly strokes: StrokeFeature;
  readonly recorder: RecorderFeature;
  private readonly features: readonly PodFeature[]; // in start order, and stopped in it
  /** what the command executor commands: the pod's operations and the features' handlers */
  readonly commander: PodCommander;
  private control_: ControlThread | undefined;
  private readonly wiring: PodWiring;
  private readonly log: Logger;
  private readonly listeners = new Listeners<AgentEvent>();
  private readonly problems: ProblemRegistry;
  private limits_: CommandLimits;
  private running = false;

  constructor(
    loaded: LoadedConfig,
    readonly logs: Logs,
    /** from the agent this one replaces at a reload */
    carried?: CarriedState,
  ) {
    const c = (this.config = loaded.config);
    this.configHash = loaded.hash;
    this.identity = { site: c.site, pod: c.pod, configHash: loaded.hash, racks: c.racks.map((r) => ({ name: r.name, ratedKw: r.ratedKw })), stateDir: stateDirOf(c) };
    this.log = logs.module("agent");
    this.problems = new ProblemRegistry(this.log);
    this.layout = podLayout(c);
    this.wiring = new PodWiring(c, this.layout, { writeCaps: c.supervisor.powerBudget.writeCaps });
    this.field = podField(c, this.wiring, this.points, logs, this, () => this.control.frames);
    this.supervisor = new Supervisor(c.supervisor, c, this.layout, (e) => this.emit(e), monoMs, Date.now(), carried?.pumpLead);
    this.limits_ = commandLimits(c);
    const ctx: PodContext = {
      config: c,
      configHash: this.configHash,
      layout: this.layout,
      stateDir: this.stateDir,
      points: this.points,
      supervisor: this.supervisor,
      control: () => this.control,
      outputs: () => this.loop.outputs(),
      commanded: () => this.loop.commanded(),
      reading: (bankIndex, id) => this.loop.reading(bankIndex, id),
      emit: (e) => this.emit(e),
      onEvent: (l) => this.onEvent(l),
      log: (m) => logs.module(m),
      reportProblem: (id, p) => this.reportProblem(id, p),
      resolveProblem: (id) => this.resolveProblem(id),
      holdIsolation: (rack, bits, maxMs) => {
        this.wiring.setStroke(rack, bits);
        this.field.leak?.setStroke(rack, bits, maxMs);
        this.loop.writeActuators();
      },
      holdBounded: (id) => this.field.leak?.ownsOutput(id) === true,
    };
    this.tuning = new TuningFeature(ctx);
    this.operator = new OperatorDecisions(ctx, { limits: () => this.limits_, loopTaken: (loop, why) => this.tuning.loopTaken(loop, why), carried });
    this.valves = new ValveWatch(ctx);
    this.strokes = new StrokeFeature(ctx);
    this.recorder = new RecorderFeature(ctx);
    this.features = [this.operator, this.tuning, this.valves, this.strokes, this.recorder, new ReleaseFeature(ctx)];
    this.loop = new PodLoop({ config: c, layout: this.layout, wiring: this.wiring, points: this.points, supervisor: this.supervisor, field: this.field.io, leak: this.field.leak, control: () => this.control, features: this.features, problems: this.problems, log: this.log });
    this.field.setHealthGate(() => this.loop.healthy()); // device leases are renewed only while it is
    this.commander = podCommander({ core: this, operator: this.operator, tuning: this.tuning, strokes: this.strokes, recorder: this.recorder });
  }

  /** The control worker's handle; there is none before the start. */
  get control(): ControlThread {
    if (this.control_ === undefined) throw new Error("the agent has not started");
    return this.control_;
  }

  get limits(): CommandLimits {
    return this.limits_;
  }

  /** Where state that must survive a restart lives, if anywhere. */
  get stateDir(): string | undefined {
    return stateDirOf(this.config);
  }

  async start(): Promise<void> {
    const c = this.config;
    // the worker's first bank carries the gains an engineer applied before the restart
    this.control_ = new ControlThread(podBankSpec(c.control, this.layout, c.racks, this.tuning.restore()), {
      periodMs: c.control.periodMs,
      schedFifo: c.control.schedFifo,
      schedPriority: c.control.schedPriority,
      warmupTicks: c.control.warmupTicks,
      recorder: this.recorder.ring(),
      onLog: (level, message) => this.logs.module("control")[level](message),
    });
    // latches, the budget and the operator's decisions are back before the first tick
    this.operator.restore();
    await this.control_.start();
    if (this.control_.schedFifo === "on") this.logs.module("control").info("control thread running SCHED_FIFO");
    this.running = true;
    for (const f of this.features) await f.start?.();
    await this.loop.start();
    const { leak, leakLeft } = this.field;
    if (leak !== null) this.log.info({ left: leakLeft, buses: this.config.modbus.buses.filter((b) => leak.ownsBus(b.name)).map((b) => b.name), schedFifo: leak.thread.sched }, "leak inputs, isolation valves and rack power outputs of TCP devices, and the serial buses that carry any, served by the leak thread");
    if (leakLeft.length > 0) this.log.warn({ ids: leakLeft }, "leak inputs, isolation valves and rack power outputs on a serial bus with RTS direction control, or on BMCs, are served by the control plane's thread: its work can delay their isolation (docs/safety.md)");
    this.emit({ type: "agent.started" });
  }

  /**
   * Stops the agent. With driveSafe, every control actuator is first written to its declared
   * sensor-fault safe value (isolation valves stay as they are: an isolated rack stays
   * isolated), and the heartbeat stops, so the devices' own leases take over from there.
   */
  async stop(opts: { driveSafe: boolean; reason: string; timeoutMs?: number }): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.emit({ type: "agent.stopping", reason: opts.reason });
    // let go while the writes still go out: a valve held for a test opens again, a tuning ends
    for (const f of this.features) f.release?.(opts.reason);
    this.loop.halt(); // closes the health gate: no more lease heartbeats
    if (opts.driveSafe) await this.loop.driveSafe(opts.timeoutMs ?? 2000);
    this.loop.end();
    // what each feature is saving (latches, decisions, gains, verdicts, recordings) lands first
    for (const f of this.features) await f.settle?.();
    await this.control.stop();
    await this.field.io.stop();
  }

  /** New tuning in place (same structure): gains, limits, checks, thresholds, setpoint defaults. */
  applyTuning(next: AgentConfig): void {
    if (!sameStructure(this.config, next)) throw new Error("structure changed: a restart is needed");
    this.control.patch(podBankSpec(next.control, this.layout, next.racks, this.tuning.gains()));
    this.loop.reconfigure(next);
    this.valves.reconfigure(next);
    this.supervisor.reconfigure(next.supervisor, next.control.isolation);
    Object.assign(this.config, { control: next.control, supervisor: next.supervisor, valveHealth: next.valveHealth, log: next.log });
    this.limits_ = commandLimits(this.config);
    this.operator.reconfigure(next);
  }

  /** The state a structural reload hands to the agent that replaces this one. */
  carryOver(): CarriedState {
    return { ...this.operator.carryOver(), pumpLead: this.supervisor.pumpDuty?.leadName };
  }

  onEvent(l: (e: AgentEvent) => void): () => void {
    return this.listeners.add(l);
  }

  private emit(e: AgentEvent): void {
    // listeners (the uplink, the recorder) first: the event is on the wire before the log line is formatted
    this.listeners.emit(e);
    const level = e.type === "alarm.raised" && e.alarm.severity === "Critical" ? "warn" : "info";
    this.log[level]({ event: e }, e.type);
  }

  reportProblem(id: string, p: ProblemReport): void {
    this.problems.reportProblem(id, p);
  }

  resolveProblem(id: string): void {
    this.problems.resolveProblem(id);
  }

  /** Acknowledges an alarm; a one-off problem's alarm is thereby resolved. */
  acknowledgeAlarm(id: string, by: string): boolean {
    const known = this.supervisor.alarms.acknowledge(id, by);
    if (known) this.problems.acknowledged(id);
    return known;
  }

  /** Carries out a command through the executor, on this pod's own operations and its features'. */
  execute(body: CommandRequest, by: string): Promise<Outcome> {
    return executeCommand(this.commander, body, by);
  }

  audit(a: AuditRecord): void {
    this.emit({ type: "command.audit", ...a });
  }

  // PodReader
  mode = (): PodMode => this.supervisor.mode;
  activeAlarms = (): Alarm[] => this.supervisor.alarms.active();
  powerBudgetKw = (): number => this.supervisor.powerBudgetKw;
  healthy = (): boolean => this.loop.healthy();
  /** Every field point the agent reads: Modbus, MQTT ingest and Redfish alike. */
  fieldPoints = (): Point[] => [...this.points.all()];
  status = (): PodStatus => this.loop.status(this.operator.setpoints, (rack) => this.valves.view(rack), (id) => this.points.get(id));
  recentRecordings = (n: number): RecordingSummary[] => this.recorder.recentRecordings(n);

  snapshot(): Record<string, unknown> {
    return { status: this.status(), alarms: this.activeAlarms(), ...this.operator.snapshot(), powerBudgetKw: this.supervisor.powerBudgetKw, configHash: this.configHash };
  }

  // PodDiagnostics
  controlStats = (): ReturnType<PodDiagnostics["controlStats"]> => this.loop.controlStats();
  ingestStats(): ReturnType<PodDiagnostics["ingestStats"]> {
    const i = this.field.ingest;
    return i === null ? null : { connected: i.connected, messages: i.messages, rejected: i.rejected, retainedIgnored: i.retainedIgnored, outOfOrder: i.outOfOrder, oversized: i.oversized, silentBrokerDrops: i.silentBrokerDrops, protocolErrorDrops: i.protocolErrorDrops };
  }
  redfishStats = (): ReturnType<PodDiagnostics["redfishStats"]> => this.field.redfish?.stats() ?? [];
  strokeStatus = (): ReturnType<PodDiagnostics["strokeStatus"]> => this.strokes.strokeStatus();
  deviceHealth = (): ReturnType<PodDiagnostics["deviceHealth"]> => this.supervisor.devices;
  modbusStats(): ReturnType<PodDiagnostics["modbusStats"]> {
    const main = this.field.modbus.stats();
    const leak = this.field.leak?.thread.stats();
    return leak === undefined ? main : { devices: [...main.devices, ...leak.devices], buses: [...main.buses, ...leak.buses], polls: [...main.polls, ...leak.polls] };
  }
}
