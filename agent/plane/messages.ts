// What crosses between the two planes (docs/architecture.md, Threads): the service plane on the
// main thread, the control plane on a thread of its own (control-plane-worker.ts). Every message
// is structured-cloned data; each direction is bounded by a QueueGauge (queue-gauge.ts).
import type { LogHistogram } from "../../lib/log-histogram.js";
import type { Point } from "../../lib/points.js";
import type { ScanOptions } from "../../drivers/modbus/bus-scan.js";
import type { CarriedState } from "../lifecycle.js";
import type { LoadedConfig } from "../config/load.js";
import type { StrokeStatus } from "../health/isolation-strokes.js";
import type { AgentEvent, AuditRecord, CommandRequest, PodDiagnostics, PodStatus, ProblemReport } from "../pod-api.js";
import type { Alarm } from "../supervisor/alarms.js";
import type { PodMode } from "../supervisor/supervisor.js";

/** Which pair of QueueGauge words counts which direction. */
export const QUEUES = {
  /** service -> control: requests, audits, problems (messages) */
  toControl: 0,
  /** control -> service: views, events, replies (messages) */
  toService: 1,
  /** control -> service: log text (bytes) */
  logs: 2,
  count: 3,
} as const;

/** The bounds of those queues. */
export const QUEUE_BOUNDS = {
  /** requests and notes waiting for the control plane: past it a command is refused as busy */
  toControl: 256,
  /** views, events and replies waiting for the service plane: past it views are skipped, events dropped with a count */
  toService: 4096,
  /** log text waiting to be written: past it lines are dropped with a count */
  logBytes: 4 * 1024 * 1024,
} as const;

/** What the control plane starts from. */
export interface ControlPlaneInput {
  loaded: LoadedConfig;
  carried?: CarriedState;
  gauges: SharedArrayBuffer;
  /** how often the pod's view goes to the service plane, ms */
  viewMs: number;
  /** the control plane thread's nice value (null: left as the process's) */
  nice: number | null;
}

type ControlStatsView = Omit<ReturnType<PodDiagnostics["controlStats"]>, "lateness" | "actuatorPassLateness"> & { lateness: LogHistogram["counts"]; actuatorPassLateness: LogHistogram["counts"] };

/** The pod as the service plane reads it: everything PodReader and PodDiagnostics answer, built on the control plane. */
export interface PodView {
  /** monoMs when it was built (the same clock in every thread) */
  atMs: number;
  mode: PodMode;
  healthy: boolean;
  status: PodStatus;
  snapshot: Record<string, unknown>;
  alarms: Alarm[];
  points: Point[];
  powerBudgetKw: number;
  control: ControlStatsView;
  modbus: ReturnType<PodDiagnostics["modbusStats"]>;
  ingest: ReturnType<PodDiagnostics["ingestStats"]>;
  redfish: ReturnType<PodDiagnostics["redfishStats"]>;
  stroke: StrokeStatus;
  devices: ReturnType<PodDiagnostics["deviceHealth"]>;
  recordingsDir?: string;
  /** what the control plane dropped or skipped on its way out, since the start */
  dropped: { events: number; logLines: number; views: number };
}

export type Request =
  | { op: "execute"; body: CommandRequest; by: string }
  | { op: "reset-leak"; rack: number }
  | { op: "record"; by: string }
  | { op: "scan"; bus: string; o: ScanOptions }
  | { op: "reload"; loaded: LoadedConfig }
  | { op: "stop"; driveSafe: boolean; reason: string; timeoutMs: number };

/** service plane -> control plane */
export type ToControl = { t: "req"; id: number; req: Request } | { t: "audit"; record: AuditRecord } | { t: "problem"; id: string; report: ProblemReport | null };

/** control plane -> service plane */
export type ToService =
  | { t: "started"; view: PodView }
  | { t: "failed"; error: string }
  | { t: "view"; view: PodView }
  /** the events of one turn of the control plane, with the view taken after them: a service that reads on an event reads its effect */
  | { t: "events"; es: AgentEvent[]; view: PodView }
  | { t: "reply"; id: number; ok: true; value: unknown; view: PodView }
  | { t: "reply"; id: number; ok: false; error: string; view: PodView }
  | { t: "log"; text: string; bytes: number };
