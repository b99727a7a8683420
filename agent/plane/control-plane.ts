// The control plane as the service plane holds it: the handle on its thread
// (control-plane-worker.ts), and the faces the services take of the pod (pod-api.ts), answered
// from the last view the control plane sent and by requests to it. Nothing here waits on the
// control plane's thread but a request's own promise; a request past the queue's bound is
// refused at once, counted, and never queued (docs/architecture.md, Threads).
import { Worker } from "node:worker_threads";
import { monoMs } from "../../lib/clock.js";
import { Listeners } from "../../lib/listeners.js";
import { LogHistogram } from "../../lib/log-histogram.js";
import type { Point } from "../../lib/points.js";
import { builtWorker } from "../../lib/worker-path.js";
import { podLayout, type PodLayout } from "../../pod/layout.js";
import { stateDirOf, type CarriedState } from "../lifecycle.js";
import { commandLimits } from "../commands/executor.js";
import type { AgentConfig, LoadedConfig } from "../config/load.js";
import type { StrokeStatus } from "../health/isolation-strokes.js";
import type { Logs } from "../log.js";
import type {
  AgentEvent,
  AuditRecord,
  CommandLimits,
  CommandRequest,
  Outcome,
  PodCommands,
  PodDiagnostics,
  PodIdentity,
  PodReader,
  PodStatus,
  ProblemReport,
  ProblemReporter,
  RecordingSummary,
} from "../pod-api.js";
import { listRecordings, recentSummaries } from "../recorder/recording-file.js";
import type { Alarm } from "../supervisor/alarms.js";
import type { PodMode } from "../supervisor/supervisor.js";
import { QUEUE_BOUNDS, QUEUES, type ControlPlaneInput, type PodView, type Request, type ToControl, type ToService } from "./messages.js";
import { QueueGauge } from "./queue-gauge.js";
import type { ScanOptions, ScanRow } from "../../drivers/modbus/bus-scan.js";

/** The control plane thread's nice value where the config asks for real-time scheduling (control.schedFifo). */
export const CONTROL_PLANE_NICE = -10;

/** How often the control plane sends its view, ms: what status, telemetry and the HMI read is at most this old. */
export const VIEW_MS = 100;

/**
 * A view older than this says the control plane's thread is not running its event loop: the pod
 * is then not healthy (so /healthz, /readyz and the systemd watchdog say so), whatever the last
 * view said.
 */
export const STALE_VIEW_MS = 2000;

/** What the service plane's queue refused or dropped, since the start. */
export interface PlaneCounts {
  /** requests refused because the control plane had QUEUE_BOUNDS.toControl waiting */
  refused: number;
  /** audit records and problems dropped for the same reason */
  droppedNotes: number;
  /** what the control plane dropped on its way out: events, log lines, views it skipped */
  dropped: PodView["dropped"];
}

export class ControlPlaneBusyError extends Error {
  constructor(waiting: number) {
    super(`the control plane has ${waiting} requests waiting: refused, try again`);
    this.name = "ControlPlaneBusyError";
  }
}

/**
 * The service plane's end of the queues from the control plane: every message counted as taken,
 * log text written at once, the rest handed on. One for the start and the run that follows it.
 */
class Inbox {
  private readonly toService: QueueGauge;
  private readonly logQueue: QueueGauge;

  constructor(
    gauges: SharedArrayBuffer,
    private readonly logs: Logs,
  ) {
    this.toService = new QueueGauge(gauges, QUEUES.toService, QUEUE_BOUNDS.toService);
    this.logQueue = new QueueGauge(gauges, QUEUES.logs, QUEUE_BOUNDS.logBytes);
  }

  /** Takes `m` off its queue: null for log text (written here), else the message. */
  take(m: ToService): Exclude<ToService, { t: "log" }> | null {
    if (m.t === "log") {
      this.logQueue.taken(m.bytes);
      this.logs.writeRaw(m.text);
      return null;
    }
    this.toService.taken();
    return m;
  }
}

export class ControlPlane implements PodReader, PodDiagnostics, PodCommands, ProblemReporter {
  readonly identity: PodIdentity;
  readonly layout: PodLayout;
  private limits_: CommandLimits;
  private config_: AgentConfig;
  private configHash_: string;
  private view_: PodView;
  private readonly listeners = new Listeners<AgentEvent>();
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private readonly toControl: QueueGauge;
  private readonly counts = { refused: 0, droppedNotes: 0 };
  private exited: Error | null = null;

  private constructor(
    private readonly worker: Worker,
    loaded: LoadedConfig,
    first: PodView,
    gauges: SharedArrayBuffer,
    inbox: Inbox,
  ) {
    this.config_ = loaded.config;
    this.configHash_ = loaded.hash;
    const c = loaded.config;
    this.identity = { site: c.site, pod: c.pod, configHash: loaded.hash, racks: c.racks.map((r) => ({ name: r.name, ratedKw: r.ratedKw })), stateDir: stateDirOf(c) };
    this.layout = podLayout(c);
    this.limits_ = commandLimits(c);
    this.view_ = first;
    this.toControl = new QueueGauge(gauges, QUEUES.toControl, QUEUE_BOUNDS.toControl);
    worker.on("message", (m: ToService) => {
      const taken = inbox.take(m);
      if (taken !== null) this.receive(taken);
    });
  }

  /**
   * Starts the control plane's thread on `loaded` and resolves once its agent runs (its first
   * view in hand); rejects with the agent's start error. `logs` writes the thread's log lines.
   */
  static async start(loaded: LoadedConfig, logs: Logs, carried?: CarriedState): Promise<ControlPlane> {
    const c = loaded.config.control;
    const gauges = QueueGauge.buffer(QUEUES.count);
    const input: ControlPlaneInput = { loaded, carried, gauges, viewMs: VIEW_MS, nice: c.schedFifo ? CONTROL_PLANE_NICE : null };
    const worker = new Worker(builtWorker(import.meta.url, "control-plane-worker.js"), { workerData: input });
    const inbox = new Inbox(gauges, logs);
    const first = await new Promise<PodView>((resolve, reject) => {
      const early = (m: ToService): void => {
        const taken = inbox.take(m);
        if (taken?.t === "started") done(null, taken.view);
        else if (taken?.t === "failed") done(new Error(taken.error));
      };
      const exit = (code: number): void => done(new Error(`the control plane's thread ended (exit ${code}) before its agent started`));
      const error = (err: Error): void => done(err);
      const done = (err: Error | null, v?: PodView): void => {
        worker.off("message", early);
        worker.off("exit", exit);
        worker.off("error", error);
        if (err === null) resolve(v!);
        else {
          void worker.terminate();
          reject(err);
        }
      };
      worker.on("message", early);
      worker.once("exit", exit);
      worker.once("error", error);
    });
    const plane = new ControlPlane(worker, loaded, first, gauges, inbox);
    worker.once("error", (err) => plane.ended(err));
    worker.once("exit", (code) => plane.ended(new Error(`the control plane's thread ended (exit ${code})`)));
    return plane;
  }

  private receive(m: Exclude<ToService, { t: "log" }>): void {
    switch (m.t) {
      case "view":
        this.view_ = m.view;
        return;
      case "events":
        // the view first: a listener that reads the pod on an event reads its effect
        this.view_ = m.view;
        for (const e of m.es) this.listeners.emit(e);
        return;
      case "reply": {
        // the view taken after the request: what a service reads next shows its effect
        this.view_ = m.view;
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        if (m.ok) p?.resolve(m.value);
        else p?.reject(new Error(m.error));
        return;
      }
      default:
        return;
    }
  }

  private ended(err: Error): void {
    if (this.exited !== null) return;
    this.exited = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  /** A request to the control plane; refused at once (ControlPlaneBusyError) past the queue's bound. */
  private request<T>(req: Request): Promise<T> {
    if (this.exited !== null) return Promise.reject(this.exited);
    if (!this.toControl.admit()) {
      this.counts.refused++;
      return Promise.reject(new ControlPlaneBusyError(this.toControl.depth()));
    }
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ t: "req", id, req } satisfies ToControl);
    });
  }

  /** A note that needs no answer (an audit record, a problem): dropped with a count past the bound. */
  private note(m: ToControl): void {
    if (this.exited !== null) return;
    if (!this.toControl.admit()) {
      this.counts.droppedNotes++;
      return;
    }
    this.worker.postMessage(m);
  }

  // ---- lifecycle --------------------------------------------------------------------------

  get config(): AgentConfig {
    return this.config_;
  }

  get configHash(): string {
    return this.configHash_;
  }

  get stateDir(): string | undefined {
    return this.identity.stateDir;
  }

  get recordingsDir(): string | undefined {
    return this.view_.recordingsDir;
  }

  /**
   * A validated config, taken by the control plane: in place when only tuning changed, else by
   * restarting the agent's internals there (the devices' leases hold the actuators meanwhile).
   */
  async reload(next: LoadedConfig): Promise<"tuning" | "restarted"> {
    const how = await this.request<"tuning" | "restarted">({ op: "reload", loaded: next });
    this.config_ = next.config;
    this.configHash_ = next.hash;
    this.limits_ = commandLimits(next.config);
    return how;
  }

  /** Stops the agent (driving the actuators safe if asked), then the thread. */
  async stop(opts: { driveSafe: boolean; reason: string; timeoutMs?: number }): Promise<void> {
    try {
      await this.request({ op: "stop", driveSafe: opts.driveSafe, reason: opts.reason, timeoutMs: opts.timeoutMs ?? 2000 });
    } finally {
      await this.worker.terminate();
    }
  }

  planeCounts(): PlaneCounts {
    return { ...this.counts, dropped: { ...this.view_.dropped } };
  }

  // ---- PodReader --------------------------------------------------------------------------

  mode(): PodMode {
    return this.view_.mode;
  }

  status(): PodStatus {
    return this.view_.status;
  }

  snapshot(): Record<string, unknown> {
    return this.view_.snapshot;
  }

  fieldPoints(): Point[] {
    return this.view_.points;
  }

  activeAlarms(): Alarm[] {
    return this.view_.alarms;
  }

  powerBudgetKw(): number {
    return this.view_.powerBudgetKw;
  }

  onEvent(l: (e: AgentEvent) => void): () => void {
    return this.listeners.add(l);
  }

  /** Healthy as the control plane last said, and only while it keeps saying so. */
  healthy(): boolean {
    return this.exited === null && this.view_.healthy && monoMs() - this.view_.atMs < STALE_VIEW_MS;
  }

  // ---- PodDiagnostics ---------------------------------------------------------------------

  controlStats(): ReturnType<PodDiagnostics["controlStats"]> {
    const c = this.view_.control;
    return { ...c, lateness: new LogHistogram(c.lateness), actuatorPassLateness: new LogHistogram(c.actuatorPassLateness) };
  }

  modbusStats(): ReturnType<PodDiagnostics["modbusStats"]> {
    return this.view_.modbus;
  }

  ingestStats(): ReturnType<PodDiagnostics["ingestStats"]> {
    return this.view_.ingest;
  }

  redfishStats(): ReturnType<PodDiagnostics["redfishStats"]> {
    return this.view_.redfish;
  }

  strokeStatus(): StrokeStatus {
    return this.view_.stroke;
  }

  deviceHealth(): ReturnType<PodDiagnostics["deviceHealth"]> {
    return this.view_.devices;
  }

  // ---- PodCommands and the admin socket's own two -----------------------------------------

  get limits(): CommandLimits {
    return this.limits_;
  }

  execute(body: CommandRequest, by: string): Promise<Outcome> {
    return this.request<Outcome>({ op: "execute", body, by }).catch((err: Error) =>
      err instanceof ControlPlaneBusyError ? { status: "rejected", code: "refused", reason: err.message } : Promise.reject(err),
    );
  }

  audit(record: AuditRecord): void {
    this.note({ t: "audit", record });
  }

  resetLeak(rack: number): Promise<"accepted" | "refused-wet" | "timeout"> {
    return this.request({ op: "reset-leak", rack });
  }

  recordNow(by: string): Promise<string> {
    return this.request({ op: "record", by });
  }

  scanBus(bus: string, o: ScanOptions): Promise<ScanRow[]> {
    return this.request({ op: "scan", bus, o });
  }

  /** Read from the recordings' directory here: listing files is the service plane's work. */
  recentRecordings(n: number): RecordingSummary[] {
    const dir = this.recordingsDir;
    if (dir === undefined) return [];
    try {
      return recentSummaries(listRecordings(dir).recordings, n);
    } catch {
      return [];
    }
  }

  // ---- ProblemReporter --------------------------------------------------------------------

  reportProblem(id: string, report: ProblemReport): void {
    this.note({ t: "problem", id, report });
  }

  resolveProblem(id: string): void {
    this.note({ t: "problem", id, report: null });
  }
}
