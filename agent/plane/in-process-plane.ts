// The control plane on the main thread, for a pod with RS-485 buses: serialport's native binding
// delivers a port's data on the main thread's event loop only, and opened from a worker it took
// the daemon down (a fatal V8 error, "Entering the V8 API without proper locking", in the RTU
// HIL scenario). Such a pod runs its agent here, as before the two planes, with the same faces
// the service plane takes of ControlPlane, and says so at start: its service inputs share the
// control plane's thread (docs/architecture.md, Threads; docs/safety.md).
import { Agent } from "../agent.js";
import type { LoadedConfig } from "../config/load.js";
import type { StrokeStatus } from "../health/isolation-strokes.js";
import type { Logs } from "../log.js";
import type { AgentEvent, AuditRecord, CommandRequest, Outcome, PodDiagnostics, PodStatus, ProblemReport, RecordingSummary } from "../pod-api.js";
import type { Alarm } from "../supervisor/alarms.js";
import type { PodMode } from "../supervisor/supervisor.js";
import { Listeners } from "../../lib/listeners.js";
import type { Point } from "../../lib/points.js";
import { reloadAgent, type Hosted, startAgent } from "./agent-host.js";
import type { PodPlane } from "./pod-plane.js";
import type { ScanOptions, ScanRow } from "../../drivers/modbus/bus-scan.js";

export class InProcessPlane implements PodPlane {
  private readonly hosted: Hosted;
  private readonly listeners = new Listeners<AgentEvent>();
  private unsubscribe: () => void = () => undefined;

  private constructor(
    loaded: LoadedConfig,
    private readonly logs: Logs,
  ) {
    this.hosted = { agent: new Agent(loaded, logs), running: loaded };
    this.follow(this.hosted.agent);
  }

  static async start(loaded: LoadedConfig, logs: Logs): Promise<InProcessPlane> {
    const plane = new InProcessPlane(loaded, logs);
    await startAgent(plane.hosted.agent);
    return plane;
  }

  private follow(a: Agent): void {
    this.unsubscribe();
    this.unsubscribe = a.onEvent((e) => {
      this.listeners.emit(e);
    });
  }

  private get agent(): Agent {
    return this.hosted.agent;
  }

  get config(): Agent["config"] {
    return this.agent.config;
  }
  /** the config taken last, a tuning reload's too (the agent keeps the hash it was built with) */
  get configHash(): string {
    return this.hosted.running.hash;
  }
  get identity(): Agent["identity"] {
    return this.agent.identity;
  }
  get layout(): Agent["layout"] {
    return this.agent.layout;
  }
  get limits(): Agent["limits"] {
    return this.agent.limits;
  }
  get stateDir(): string | undefined {
    return this.agent.stateDir;
  }
  get recordingsDir(): string | undefined {
    return this.agent.recorder.dir;
  }

  reload(next: LoadedConfig): Promise<"tuning" | "restarted"> {
    return reloadAgent(this.hosted, next, this.logs, this.logs.module("agent"), (a) => this.follow(a));
  }
  stop(opts: { driveSafe: boolean; reason: string; timeoutMs?: number }): Promise<void> {
    return this.agent.stop(opts);
  }

  mode(): PodMode {
    return this.agent.mode();
  }
  status(): PodStatus {
    return this.agent.status();
  }
  snapshot(): Record<string, unknown> {
    return this.agent.snapshot();
  }
  fieldPoints(): Point[] {
    return this.agent.fieldPoints();
  }
  activeAlarms(): Alarm[] {
    return this.agent.activeAlarms();
  }
  powerBudgetKw(): number {
    return this.agent.powerBudgetKw();
  }
  onEvent(l: (e: AgentEvent) => void): () => void {
    return this.listeners.add(l);
  }
  healthy(): boolean {
    return this.agent.healthy();
  }

  controlStats(): ReturnType<PodDiagnostics["controlStats"]> {
    return this.agent.controlStats();
  }
  modbusStats(): ReturnType<PodDiagnostics["modbusStats"]> {
    return this.agent.modbusStats();
  }
  ingestStats(): ReturnType<PodDiagnostics["ingestStats"]> {
    return this.agent.ingestStats();
  }
  redfishStats(): ReturnType<PodDiagnostics["redfishStats"]> {
    return this.agent.redfishStats();
  }
  strokeStatus(): StrokeStatus {
    return this.agent.strokeStatus();
  }
  deviceHealth(): ReturnType<PodDiagnostics["deviceHealth"]> {
    return this.agent.deviceHealth();
  }

  execute(body: CommandRequest, by: string): Promise<Outcome> {
    return this.agent.execute(body, by);
  }
  audit(a: AuditRecord): void {
    this.agent.audit(a);
  }
  recentRecordings(n: number): RecordingSummary[] {
    return this.agent.recentRecordings(n);
  }
  resetLeak(rack: number): Promise<"accepted" | "refused-wet" | "timeout"> {
    return this.agent.commander.resetLeak(rack);
  }
  recordNow(by: string): string {
    return this.agent.commander.recordNow(by);
  }
  scanBus(bus: string, o: ScanOptions): Promise<ScanRow[]> {
    return this.agent.field.scanBus(bus, o);
  }

  reportProblem(id: string, p: ProblemReport): void {
    this.agent.reportProblem(id, p);
  }
  resolveProblem(id: string): void {
    this.agent.resolveProblem(id);
  }
}
