// The pod loop: points → the pod wiring → the control worker → the actuator pass → the supervisor
// pass → the health gate, on the control plane's thread. It owns the pipeline and nothing else:
// features hook into its supervisor pass and its interlock changes (PodFeature), and every byte
// to the field goes through FieldIo.
import { monoMs } from "../../lib/clock.js";
import { COMMS_FAULTS, measuredValue, type Point, type PointStore } from "../../lib/points.js";
import { leaseFailWrites } from "../../pod/fail-safe.js";
import type { PodLayout } from "../../pod/layout.js";
import * as L from "../../hotpath-as/assembly/layout.js";
import { cduStatus, pumpStatus, supplyStatus, rackStatuses, type SupplyStatus, type ValveHealthView } from "../../pod/status-view.js";
import { qualityWords } from "../../pod/status-words.js";
import { ACTUATOR_PASS_MS, PodWiring, type OutputSink, type PodDecisions } from "../../pod/wiring.js";
import type { AgentConfig } from "../config/load.js";
import type { ControlOutputs, ControlThread } from "../control/control-thread.js";
import { PassLateness } from "../control/pass-lateness.js";
import { TickWindow } from "../control/tick-window.js";
import type { Logger } from "../log.js";
import type { PodDiagnostics, PodStatus } from "../pod-api.js";
import type { PodFeature } from "../pod-context.js";
import type { ProblemRegistry } from "../problems.js";
import type { Reading, Supervisor } from "../supervisor/supervisor.js";
import { supervisorInputs, type ReadingSource } from "../supervisor/inputs.js";
import { cduPumps, type PumpSpec } from "../../pod/pumps.js";
import type { FieldIo } from "./field-io.js";
import type { LeakPath } from "./leak-path.js";

export interface PodLoopParts {
  config: AgentConfig;
  layout: PodLayout;
  wiring: PodWiring;
  points: PointStore;
  supervisor: Supervisor;
  field: FieldIo;
  leak: LeakPath | null;
  /** the control worker (created at the start) */
  control(): ControlThread;
  /** the pod's features, in their registered order */
  features: readonly PodFeature[];
  /** problems reported by the pod's parts, raised and cleared as alarms on each pass */
  problems: ProblemRegistry;
  log: Logger;
}

export class PodLoop {
  /** the supervisor's power decisions in force */
  decisions: PodDecisions;
  /** the control worker's outputs as last read */
  private last: ControlOutputs | undefined;
  private readonly tickWindow: TickWindow;
  /** how late the actuator passes ran */
  private readonly passLateness = new PassLateness(ACTUATOR_PASS_MS);
  /** the devices' own fail positions, as the config declares them (pod/fail-safe.ts) */
  private leaseFail: { id: string; value: number }[];
  private readonly timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => void) | null = null;
  private running = false;
  private stopping = false;

  /** the CDU's pumps (their status inputs), read each supervisor pass */
  private readonly pumps: PumpSpec[];

  constructor(private readonly p: PodLoopParts) {
    this.pumps = cduPumps(p.config.cdu);
    this.decisions = p.wiring.initialDecisions(p.supervisor.pumpDuty?.lead ?? 0);
    this.tickWindow = new TickWindow(p.config.supervisor.overrun.windowMs);
    this.leaseFail = leaseFailWrites(p.config);
  }

  /**
   * Starts the pipeline on a running control worker: points routed, the field drivers started, the
   * first writes (every actuator to its declared safe state until inputs arrive: every loop is in
   * fail-safe), then the supervisor pass, the actuator pass and the interlock watch.
   */
  async start(): Promise<void> {
    const { config: c } = this.p;
    this.running = true;
    this.unsubscribe = this.p.points.subscribe((pt) => this.onPoint(pt));
    await this.p.field.start();
    this.writeActuators();
    this.timers.push(setInterval(() => this.supervise(), c.supervisor.periodMs));
    this.timers.push(
      setInterval(() => {
        this.passLateness.mark(monoMs());
        this.writeActuators();
      }, ACTUATOR_PASS_MS),
    );
    void this.interlockWatch();
  }

  /** Closes the health gate (no more lease heartbeats) and ends the passes; writes may still go out. */
  halt(): void {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
    this.unsubscribe?.();
  }

  /** No more writes at all. */
  end(): void {
    this.running = false;
  }

  /** New lease fail positions at a tuning reload. */
  reconfigure(next: AgentConfig): void {
    this.leaseFail = leaseFailWrites(next);
  }

  /** Open while the control loop is healthy: the drivers refresh device leases only then. */
  healthy(): boolean {
    return this.running && !this.stopping && this.p.control().healthy(this.controlMaxAgeMs()) && this.p.supervisor.mode !== "Failsafe";
  }

  private controlMaxAgeMs(): number {
    return Math.max(50, 20 * this.p.config.control.periodMs);
  }

  /** The outputs the last actuator pass wrote: the commands in force. */
  commanded(): ControlOutputs | undefined {
    return this.last;
  }

  /** The control worker's outputs read now, or the last read. */
  outputs(): ControlOutputs | undefined {
    return this.p.control().outputs() ?? this.last;
  }

  private onPoint(pt: Point): void {
    // the leak thread wrote its own points into the frames when it read them: what it reports
    // here is for status and telemetry only
    if (this.p.leak?.ownsPoint(pt.id) === true) return;
    // a leak input that changed is decided now, not at the next tick: the isolation valves'
    // close commands leave up to a period sooner
    const control = this.p.control();
    if (this.p.wiring.routeSample(pt, control, monoMs())) control.tickNow();
  }

  /** Wakes on every interlock change the worker signals and writes the actuators at once. */
  private async interlockWatch(): Promise<void> {
    while (this.running && !this.stopping) {
      await this.p.control().outputsChanged(1000);
      if (this.running && !this.stopping) {
        // a partial-stroke test is released on a leak before anything else is written
        for (const f of this.p.features) f.interlockChanged?.();
        this.writeActuators();
      }
    }
  }

  /** Sends the actuator commands for `o` (by default, the control worker's outputs read now). */
  writeActuators(o: ControlOutputs | undefined = this.p.control().outputs()): void {
    if (!this.running || o === undefined) return;
    this.last = o;
    if (this.stopping) return;
    this.p.leak?.setDecisions(this.decisions);
    this.p.wiring.writeActuators(o, this.decisions, this.sink, this.leaseFail);
  }

  /** The wiring's output sink: the field driver that owns each output, with a failed write logged rather than thrown. */
  private readonly sink: OutputSink = {
    setOutput: (id, v) => {
      try {
        this.p.field.setOutput(id, v);
      } catch (err) {
        this.p.log.error({ err }, `cannot write ${id}`);
      }
    },
  };

  /** A point's reading for the supervisor: the hot path's verdict on it, and what its driver saw. */
  reading(bankIndex: number, pointId: string, o: ControlOutputs | undefined = this.outputs()): Reading {
    const pt = this.p.points.get(pointId);
    const good = o !== undefined && o.pointQuality[bankIndex] === 0 && pt !== undefined;
    if (good) return { value: pt.value, good };
    const words = [o === undefined ? "no control output yet" : qualityWords(o.pointQuality[bankIndex])];
    if (pt === undefined) words.push("never reported by its driver");
    else if (pt.quality !== "good") words.push(`${pt.quality}${pt.detail === undefined ? "" : ` (${pt.detail})`}`);
    // not arrived: no sample, or none fresh (the hot path's verdict), or the driver's link fault
    const comms = pt === undefined || COMMS_FAULTS.has(pt.quality) || (o !== undefined && (o.pointQuality[bankIndex] & (L.Q_STALE | L.Q_NEVER)) !== 0);
    return { value: pt?.value ?? NaN, good, why: `${pointId}: ${words.filter((w) => w !== "").join(", ")}`, comms };
  }

  /** The supervisor pass: the actuators written, each feature's pass, then the supervisor's verdict. */
  supervise(): void {
    if (!this.running || this.stopping) return;
    const { config: c, layout: lay, supervisor } = this.p;
    const control = this.p.control();
    const now = monoMs();
    const fresh = control.outputs();
    const o = fresh ?? this.last;
    // A new latch means a new isolation: its close commands leave first. Only changed outputs
    // are sent, so this is cheap when nothing did.
    if (o !== undefined) this.writeActuators(fresh);
    for (const f of this.p.features) f.supervise?.(now);
    this.p.problems.updateAlarms(supervisor.alarms);
    const frames = control.frames;
    const source: ReadingSource = {
      reading: (bankIndex, pointId) => this.reading(bankIndex, pointId, o),
      manualIsolate: (i) => frames.rackManualIsolate[i] === 1,
      noCoolant: (i) => o !== undefined && PodWiring.noCoolant(o, i),
    };
    this.decisions = supervisor.evaluate(
      supervisorInputs(
        c,
        lay,
        source,
        {
          nowMs: now,
          controlHealthy: control.healthy(this.controlMaxAgeMs()),
          recentTicks: this.tickWindow.update(now, { ticks: control.ticks, overruns: control.overruns, lateness: control.latenessHistogram() }),
          loopStatus: o?.loopStatus ?? [],
          loopOut: o?.loopOut ?? [],
          rackState: o?.rackState ?? [],
          rackStatus: o?.rackStatus ?? [],
          wallMs: Date.now(),
          devices: this.p.field.health(),
        },
        this.pumps,
      ),
    );
    this.p.field.alarmOutputs(now);
  }

  /**
   * Writes every control actuator to its declared sensor-fault safe value (isolation valves stay
   * as they are) and waits, up to timeoutMs, for the devices to confirm them.
   */
  async driveSafe(timeoutMs: number): Promise<void> {
    const writes: string[] = [];
    for (const w of this.p.wiring.safeWrites(this.outputs(), this.p.config.control, this.decisions.pumpRun)) {
      try {
        if (this.p.field.setOutput(w.id, w.value)) writes.push(w.id);
      } catch (err) {
        this.p.log.error({ err }, `cannot write ${w.id} safe`);
      }
    }
    const t0 = monoMs();
    const done = (): boolean =>
      writes.every((id) => {
        const s = this.p.field.outputState(id);
        return s !== undefined && s.writtenAtMs !== null && s.writtenAtMs >= t0 && s.written === s.value;
      });
    while (!done() && monoMs() - t0 < timeoutMs) await new Promise((r) => setTimeout(r, 10));
    if (!done()) this.p.log.warn("not every actuator confirmed its safe value before shutdown; device leases will take over");
  }

  /** The pod's status: racks, pump and the control worker's timing. */
  status(setpoints: readonly number[], valveHealth: (rack: number) => ValveHealthView | null, point: (id: string) => Point | undefined): PodStatus {
    const { config: c, layout, wiring, supervisor } = this.p;
    const ct = this.p.control();
    const outputs = this.last ?? ct.outputs();
    const d = this.decisions;
    const view = {
      outputs,
      decisions: d,
      power: (i: number) => (outputs === undefined ? { powerOff: d.rackPowerOff[i], capKw: d.powerCapsKw[i], writeCap: c.supervisor.powerBudget.writeCaps } : wiring.powerCommand(outputs, d, i)),
      value: (id: string) => measuredValue(point(id)),
      quality: (id: string) => point(id)?.quality,
      setpoints,
      manualIsolate: ct.frames.rackManualIsolate,
      valveHealth,
    };
    return {
      mode: supervisor.mode,
      maintenance: supervisor.maintenance,
      racks: rackStatuses(c, layout, view),
      pump: pumpStatus(c, layout, view),
      cdu: cduStatus(c, view),
      ...optionalSupply(supplyStatus(c, layout, view)),
      alarms: supervisor.alarms.stats(),
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
    const ct = this.p.control();
    return { ticks: ct.ticks, urgentTicks: ct.urgentTicks, overruns: ct.overruns, maxLatenessUs: ct.maxLatenessUs, lateness: ct.latenessHistogram(), recent: this.tickWindow.recent(), failsafeEntries: ct.failsafeEntries, actuatorPassLateness: this.passLateness.histogram };
  }
}

/** The supply loop's status as a key of the pod's, only where there is one. */
function optionalSupply(supply: SupplyStatus | undefined): { supply?: SupplyStatus } {
  return supply === undefined ? {} : { supply };
}
