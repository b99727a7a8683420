// Per-bus transaction scheduler: a priority queue in front of one transport.
//
// - An RS-485 bus carries one transaction at a time; a TCP device as many as it allows.
// - Lower priority numbers go first: leak and safety polls and writes before control polls,
//   control before telemetry.
// - A device whose circuit breaker is open gets no bus time: its jobs finish at once as
//   "offline", so a dead or slow device never stalls the others on its bus.
// - Bus time is accounted over a sliding second; past the budget, jobs marked sheddable
//   (telemetry) are skipped and counted as overruns.
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { monoMs } from "../../lib/clock.js";
import type { CircuitBreaker } from "../breaker.js";
import { BusyWindow } from "./busy-window.js";
import { exceptionPolicy, type ModbusOutcome, type ModbusRequest, type ModbusTransport } from "./types.js";

export interface BusDevice {
  name: string;
  unitId: number;
  timeoutMs: number;
  retries: number;
  retryDelayMs: number;
  breaker: CircuitBreaker;
  stats: DeviceStats;
}

export interface DeviceStats {
  requests: number;
  ok: number;
  timeouts: number;
  exceptions: number;
  corrupt: number;
  /** RTU answers garbled by another unit's frame: retried, not held against this device */
  collisions: number;
  disconnected: number;
  offlineSkips: number;
  retries: number;
  /** request duration, ns */
  latency: RecordableHistogram;
  /** the last request that failed: what went wrong, and when (wall time, ISO 8601) */
  lastError: { kind: string; message: string; at: string } | null;
}

/**
 * Request latency in ns, 1 ns to 60 s at two significant figures. node's default histogram
 * spans 1 to 2^53 at three figures: ~350 KB of counters allocated per device (a heap snapshot
 * showed 3.4 MB on a 9-device pod, though untouched pages are not resident) for a resolution
 * nobody reads. This one allocates ~40 KB.
 */
const LATENCY_RANGE = { lowest: 1, highest: 60e9, figures: 2 } as const;
/** Records a request latency, clamped into the histogram's range (out-of-range values would be dropped). */
function recordLatency(h: RecordableHistogram, ns: number): void {
  h.record(Math.min(LATENCY_RANGE.highest, Math.max(LATENCY_RANGE.lowest, Math.round(ns))));
}

export const newDeviceStats = (): DeviceStats => ({
  requests: 0,
  ok: 0,
  timeouts: 0,
  exceptions: 0,
  corrupt: 0,
  collisions: 0,
  disconnected: 0,
  offlineSkips: 0,
  retries: 0,
  latency: createHistogram(LATENCY_RANGE),
  lastError: null,
});

export interface Job {
  device: BusDevice;
  request: ModbusRequest;
  priority: number;
  /** may be skipped when the bus is over its time budget */
  sheddable: boolean;
  done(outcome: ModbusOutcome): void;
}

/** A job's queue: its priority, 0 (first) to 9. */
const queueOf = (job: Job): number => Math.min(Math.max(job.priority, 0), 9);

export class Bus {
  // Jobs by priority, and beside each queue the attempts each queued job has left. Kept apart so
  // that queueing a job allocates nothing: at a 1 ms poll, heap sampling put most of what V8
  // moved to the old generation (and so the daemon's full collections, pauses on the leak path)
  // on a per-submit copy of the job with its attempts, and on the per-poll job itself.
  private readonly queues: Job[][] = Array.from({ length: 10 }, () => []);
  private readonly attempts: number[][] = Array.from({ length: 10 }, () => []);
  private inFlight = 0;
  private readonly busy = new BusyWindow();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  budgetOverruns = 0;
  private probing = new Set<BusDevice>();

  constructor(
    readonly name: string,
    readonly transport: ModbusTransport,
    private readonly budget: number,
  ) {}

  /** Share of the last second the bus spent in transactions. */
  utilization(): number {
    return this.busy.total(monoMs()) / 1000 / this.transport.maxInFlight;
  }

  submit(job: Job): void {
    if (this.stopped) return job.done({ ok: false, kind: "disconnected", message: "bus stopped" });
    if (job.sheddable && this.utilization() > this.budget) {
      this.budgetOverruns++;
      return job.done({ ok: false, kind: "error", message: "bus over its time budget: skipped" });
    }
    const p = queueOf(job);
    this.queues[p].push(job);
    this.attempts[p].push(job.device.retries);
    this.pump();
  }

  /**
   * Takes a job back out of its queue if it has not gone on the wire (a retry waiting on its
   * timer counts as gone): true when it was withdrawn, and then its `done` is never called.
   */
  withdraw(job: Job): boolean {
    const p = queueOf(job);
    const i = this.queues[p].indexOf(job);
    if (i < 0) return false;
    this.queues[p].splice(i, 1);
    this.attempts[p].splice(i, 1);
    return true;
  }

  private firstNonEmptyQueue(): number {
    for (let p = 0; p < this.queues.length; p++) if (this.queues[p].length > 0) return p;
    return -1;
  }

  private pump(): void {
    while (this.inFlight < this.transport.maxInFlight) {
      const p = this.firstNonEmptyQueue();
      if (p < 0) return;
      const job = this.queues[p].shift();
      const attemptsLeft = this.attempts[p].shift();
      if (job === undefined || attemptsLeft === undefined) return; // the two are kept in step
      const d = job.device;
      if (!d.breaker.allow() || this.probing.has(d)) {
        d.stats.offlineSkips++;
        job.done({ ok: false, kind: "disconnected", message: `${d.name} circuit breaker open` });
        continue;
      }
      if (d.breaker.state === "half-open") this.probing.add(d);
      this.run(job, attemptsLeft);
    }
  }

  private run(job: Job, attemptsLeft: number): void {
    const d = job.device;
    this.inFlight++;
    d.stats.requests++;
    const t0 = process.hrtime.bigint();
    const start = monoMs();
    void this.transport.request(d.unitId, job.request, d.timeoutMs).then((o) => {
      this.inFlight--;
      this.probing.delete(d);
      const end = monoMs();
      this.busy.record(end, end - start);
      recordLatency(d.stats.latency, Number(process.hrtime.bigint() - t0));
      this.account(job, attemptsLeft, o);
      this.pump();
    });
  }

  private account(job: Job, attemptsLeft: number, o: ModbusOutcome): void {
    const d = job.device;
    let retry = false;
    if (o.ok) {
      d.stats.ok++;
      d.breaker.success();
    } else {
      d.stats.lastError = { kind: o.kind, message: o.message.slice(0, 200), at: new Date().toISOString() };
      switch (o.kind) {
        case "timeout":
          d.stats.timeouts++;
          d.breaker.failure();
          retry = true;
          break;
        case "corrupt":
          d.stats.corrupt++;
          d.breaker.damaged();
          retry = true;
          break;
        case "collision":
          d.stats.collisions++;
          retry = true;
          break;
        case "exception": {
          d.stats.exceptions++;
          const policy = exceptionPolicy(o.code ?? 0);
          if (policy.breaker) d.breaker.failure();
          else d.breaker.success(); // the device is alive and answering
          retry = policy.retry;
          break;
        }
        case "disconnected":
          d.stats.disconnected++;
          break;
        case "error":
          break;
      }
    }
    if (retry && attemptsLeft > 0 && !this.stopped && d.breaker.allow()) {
      d.stats.retries++;
      const t = setTimeout(() => {
        this.timers.delete(t);
        if (this.stopped) return job.done(o);
        const p = queueOf(job);
        this.queues[p].unshift(job);
        this.attempts[p].unshift(attemptsLeft - 1);
        this.pump();
      }, d.retryDelayMs);
      this.timers.add(t);
      return;
    }
    job.done(o);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const a of this.attempts) a.length = 0;
    for (const q of this.queues) for (const job of q.splice(0)) job.done({ ok: false, kind: "disconnected", message: "bus stopped" });
    await this.transport.stop();
  }
}
