// The narrow faces of a running pod, one per kind of consumer. A service declares the one it
// needs and is handed it; none imports the Agent class, so none can reach past its face into
// the drivers, the control thread or the config.
import type { LoopMode } from "../hotpath-as/bank-config.js";
import type { LogHistogram } from "../lib/log-histogram.js";
import type { RecentTicks } from "./control/tick-window.js";
import type { Point } from "../lib/points.js";
import type { ModbusDriver } from "../drivers/modbus/driver.js";
import type { RedfishDeviceStats } from "../drivers/redfish/driver.js";
import type { LoopGains } from "../pod/bank.js";
import type { LoopKind, PodLayout } from "../pod/layout.js";
import type { RelayAnalysis } from "./tuning/relay-analysis.js";
import type { IsoValve, StrokeResult, StrokeStatus } from "./health/isolation-stroke.js";
import type { ForceTarget } from "./commissioning/force-target.js";
import type { CduStatus, PumpStatus, RackStatus, SupplyStatus } from "../pod/status-view.js";
import type { Alarm, AlarmStats } from "./supervisor/alarms.js";
import type { PodMode, SupervisorEvent } from "./supervisor/supervisor.js";
import type { RejectCode } from "./commands/authorizer.js";
import type { CommandBody } from "./commands/schema.js";

export type AgentEvent =
  | SupervisorEvent
  | { type: "setpoint.expired"; loop: string; value: number }
  | { type: "override.expired"; loop: string; mode: LoopMode; outputPct?: number }
  | { type: "agent.started" }
  | { type: "agent.stopping"; reason: string }
  | { type: "tuning.started"; loop: string; by: string }
  | { type: "tuning.ended"; loop: string; state: TuningStatus["state"]; reason?: string; ku?: number; puS?: number; recommended?: string }
  | { type: "stroke.started"; rack: string; valve: IsoValve; by: string }
  | ({ type: "stroke.ended" } & StrokeResult)
  | { type: "command.audit"; action: string; rack?: string; by: string; result: string; transaction?: string; reason?: string; suppressed?: number };

export type AuditRecord = Omit<Extract<AgentEvent, { type: "command.audit" }>, "type">;

export interface PodStatus {
  mode: PodMode;
  /** an operator's maintenance: shown beside the mode, which it never hides */
  maintenance: boolean;
  racks: RackStatus[];
  pump: PumpStatus;
  /** the CDU's own temperatures, flow and reservoir level (cdu.points) */
  cdu: CduStatus;
  /** the CDU's supply-temperature loop; absent without cdu.supplyControl (so a pod without one says what it said before) */
  supply?: SupplyStatus;
  /** alarms raised since the start, and those chattering now (supervisor.alarmChatter) */
  alarms: AlarmStats;
  /** cumulative since start, and `recent`: the same over the last supervisor.overrun.windowMs */
  control: Omit<RecentTicks, "spanMs"> & {
    schedFifo: string;
    recent: RecentTicks;
    /** loops that left live control for fail-safe, each time, since the start */
    failsafeEntries: number;
    /** the control plane's actuator passes: how many, and how late beyond their period */
    actuatorPass: { passes: number; p99LateUs: number; maxLateUs: number };
  };
}

/** Who the pod is: what `info` and the board show. */
export interface PodIdentity {
  site: string;
  pod: string;
  /** sha256 of the config file as read */
  configHash: string;
  racks: { name: string; ratedKw: number }[];
  /** where state that must survive a restart lives (spool, replay guard), if anywhere */
  stateDir?: string;
}

/** Reading the pod: the uplink, metrics, the status board and any HMI. */
export interface PodReader {
  readonly identity: PodIdentity;
  mode(): PodMode;
  status(): PodStatus;
  /** everything mission control needs to rebuild its picture of the pod */
  snapshot(): Record<string, unknown>;
  /** every field point the pod reads */
  fieldPoints(): Point[];
  activeAlarms(): Alarm[];
  /** the pod's power budget in force, kW: the configured one, or mission control's lower one */
  powerBudgetKw(): number;
  /** calls l with every event; returns a function that stops it */
  onEvent(l: (e: AgentEvent) => void): () => void;
  /** the control loop is healthy (device leases are refreshed only then) */
  healthy(): boolean;
}

/** The control thread's and the field drivers' counters, for metrics. */
export interface PodDiagnostics {
  controlStats(): { ticks: number; urgentTicks: number; overruns: number; maxLatenessUs: number; lateness: LogHistogram; recent: RecentTicks; failsafeEntries: number; actuatorPassLateness: LogHistogram };
  modbusStats(): ReturnType<ModbusDriver["stats"]>;
  /** null without mqttIngest */
  ingestStats(): { connected: boolean; messages: number; rejected: number; retainedIgnored: number; outOfOrder: number; oversized: number; silentBrokerDrops: number; protocolErrorDrops: number } | null;
  /** one per BMC of redfishClient (none without) */
  redfishStats(): RedfishDeviceStats[];
  /** the isolation valves' partial-stroke tests: the running one, and each valve's last */
  strokeStatus(): StrokeStatus;
  /**
   * every field device (Modbus, the leak thread's, BMCs, the ingest) answering or not, as the
   * supervisor judged it at its last pass: the one list that health windows are held to
   */
  deviceHealth(): readonly { name: string; ok: boolean; why: string }[];
}

export interface Range {
  min: number;
  max: number;
}

/** The envelope commands must stay inside: the same limits local tuning obeys. */
export interface CommandLimits {
  returnTempC: Range;
  dpKpa: Range;
  powerBudgetKw: Range;
  maxLeaseS: number;
  rackOutputPct: Range;
  pumpOutputPct: Range;
  /** the CDU's supply-temperature setpoint and primary valve (control.supplyLoop), where cdu.supplyControl configures them */
  supplyTempC: Range;
  supplyOutputPct: Range;
}

/** A loop's envelope by what it moves: its setpoint's range and words, and its output's range. */
export function loopEnvelope(limits: CommandLimits, kind: LoopKind): { setpoint: Range; setpointWords: string; output: Range } {
  if (kind === "pump") return { setpoint: limits.dpKpa, setpointWords: "dp setpoint (kPa)", output: limits.pumpOutputPct };
  if (kind === "supply") return { setpoint: limits.supplyTempC, setpointWords: "supply-temperature setpoint (°C)", output: limits.supplyOutputPct };
  return { setpoint: limits.returnTempC, setpointWords: "return-temperature setpoint (°C)", output: limits.rackOutputPct };
}

/** A rack's draw against what it may draw with no coolant. */
export interface RackLoad {
  /** the power meter's good reading, kW; null when it has none */
  drawKw: number | null;
  /** why there is no good reading */
  why?: string;
  /** the no-coolant limit (racks[].noCoolant) plus supervisor.noCoolantPower.toleranceKw */
  limitKw: number;
  isolatedByOperator: boolean;
}

/** What became of a command: carried out (with what it returns), or refused and why. */
export type Outcome = { status: "ok"; data?: unknown; rack?: string } | { status: "rejected"; code: RejectCode; reason: string; rack?: string };

/** A command as the executor takes it: its name, and its parameters already checked against the command's schema. */
export type CommandRequest = Pick<CommandBody, "command" | "params">;

/**
 * Commanding the pod from a service (the uplink, Sparkplug, the HMI, the admin socket): a command
 * goes to the executor wherever the pod's control runs (in the daemon, the control plane's thread)
 * and its outcome comes back; no service calls the pod's operations itself.
 */
export interface PodCommands {
  readonly layout: PodLayout;
  readonly limits: CommandLimits;
  /** carries out `body` as `by` through the executor (agent/commands/executor.ts) */
  execute(body: CommandRequest, by: string): Promise<Outcome>;
  /** records an operator action as an event (the log and the events topic) */
  audit(a: AuditRecord): void;
  /** the newest recordings, newest first, as summaries */
  recentRecordings(n: number): RecordingSummary[];
}

/** Commanding the pod: the command executor. */
export interface PodCommander {
  readonly layout: PodLayout;
  readonly limits: CommandLimits;
  snapshot(): Record<string, unknown>;
  // Each operator decision is saved before it applies, and rejects (changing nothing) when it
  // cannot be saved: what the pod does is never ahead of what a restart restores.
  setSetpoint(loop: number, value: number, leaseMs: number, by: string): Promise<void>;
  /** a persistent mode: it stands until changed, and ends any Override */
  setLoopMode(loop: number, mode: Exclude<LoopMode, "Override">, value?: number): Promise<void>;
  /** an Override output for leaseMs, over the loop's persistent mode */
  overrideLoop(loop: number, outputPct: number, leaseMs: number, by: string): Promise<void>;
  setMaintenance(on: boolean): Promise<void>;
  maintenance(): boolean;
  /** ends a loop's Override before its lease; false when it has none */
  endOverride(loop: number): Promise<boolean>;
  /** what a force of the output would move (agent/commissioning/force-target.ts); null: no such output */
  forceTarget(output: string): ForceTarget | null;
  isolateRack(rack: number, isolate: boolean): Promise<void>;
  /** what an operator's isolation of the rack would cut the coolant from */
  rackLoad(rack: number): RackLoad;
  /** the rack is latched for a leak: isolated until an authorised reset, whatever an operator asks */
  leakLatched(rack: number): boolean;
  resetLeak(rack: number): Promise<"accepted" | "refused-wet" | "timeout">;
  acknowledgeAlarm(id: string, by: string): boolean;
  setPowerBudget(kw: number | null): Promise<void>;
  /** records an operator action as an event (the log and the events topic) */
  audit(a: AuditRecord): void;
  /** a flight recording of the window around now (docs/engineering.md); its id. Throws without a recorder */
  recordNow(by: string): string;
  /** the newest recordings, newest first, as summaries */
  recentRecordings(n: number): RecordingSummary[];
  // relay autotune and gains (docs/engineering.md)
  /** starts a relay autotune of the loop; throws with the reason when refused */
  startTuning(loop: number, by: string): TuningStatus;
  /** aborts the loop's running tuning; null when none runs */
  abortTuning(loop: number, by: string): TuningStatus | null;
  /** the loop's running or last tuning; null when none since the agent started */
  tuningStatus(loop: number): TuningStatus | null;
  /** applies a proposal of the loop's last tuning, or gains by hand; saved before it applies, rejects when it cannot be */
  applyGains(loop: number, gains: { rule: string } | LoopGains, by: string): Promise<AppliedGains>;
  /** back to the config's gains; false when none were applied */
  revertGains(loop: number, by: string): Promise<boolean>;
  loopGains(loop: number): LoopGainsStatus;
  // partial-stroke tests of isolation valves (docs/engineering.md, Actuator health)
  /** starts a partial-stroke test of a rack's isolation valve; throws with the reason when refused */
  startStroke(rack: number, valve: IsoValve, by: string): StrokeResult;
  /** aborts the running test (its close released at once); null when none runs */
  abortStroke(by: string): StrokeResult | null;
  /** the running test, and every valve's last */
  strokeStatus(): StrokeStatus;
}

/** A relay autotune of one loop (docs/engineering.md), running or finished. */
export interface TuningStatus {
  loop: string;
  by: string;
  startedAt: string;
  /** starting: asked of the control thread; noise: output held, noise measured; relay: the relay runs */
  state: "starting" | "noise" | "relay" | "done" | "aborted" | "failed";
  /** relay switches so far, and how many finish it */
  switches: number;
  switchesNeeded: number;
  /** the relay as the hot path sized it: centre and hysteresis in PV units, amplitude in output % */
  relay?: { center: number; hysteresis: number; amplitude: number };
  endedAt?: string;
  /** why it was aborted or failed */
  reason?: string;
  /** what it found (state done) */
  result?: RelayAnalysis;
}

/** A loop's gains: the config's, and an engineer's applied over them (null: none). */
export interface LoopGainsStatus {
  loop: string;
  config: LoopGains;
  applied: AppliedGains | null;
}

/** Gains an engineer applied to a loop, over the config's. */
export interface AppliedGains extends LoopGains {
  /** the tuning rule they came from, or "manual" for gains given by hand */
  rule: string;
  by: string;
  appliedAt: string;
}

/** A flight recording as a listing shows it. */
export interface RecordingSummary {
  id: string;
  createdAt: string;
  triggers: string[];
  ticks: number;
  complete: boolean;
  bytes: number;
}

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

/** Reporting and resolving problems: the uplink, state files. */
export interface ProblemReporter {
  reportProblem(id: string, p: ProblemReport): void;
  resolveProblem(id: string): void;
}
